import torch
from torch import nn


class PairScorer:
    def __init__(self, model, num_labels=1):
        self.model = model
        self.num_labels = num_labels

    def fit(self, loader, epochs=1, loss_fct=None, activation_fct=nn.Identity(), optimizer_class=torch.optim.AdamW, lr=2e-5):
        self.model.to("cuda")
        optimizer = optimizer_class(self.model.parameters(), lr=lr)
        if loss_fct is None:
            loss_fct = nn.BCEWithLogitsLoss() if self.num_labels == 1 else nn.CrossEntropyLoss()
        for epoch in range(epochs):
            self.model.train()
            for features, labels in loader:
                outputs = self.model(**features, return_dict=True)
                logits = activation_fct(outputs.logits)
                if self.num_labels == 1:
                    logits = logits.view(-1)
                loss_value = loss_fct(logits, labels)
                loss_value.backward()
                torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
                optimizer.step()
                optimizer.zero_grad()
