"""sentence-transformers old_fit shape: the collate tokenizes each batch with the model's own preprocess()."""
import torch


class MultiObjectiveFit:
    def __init__(self, device="cuda"):
        self.device = torch.device(device)

    def collate(self, batch):
        texts = [[example.texts[i] for example in batch] for i in range(len(batch[0].texts))]
        labels = torch.tensor([example.label for example in batch])
        return [self.preprocess(column) for column in texts], labels

    def fit(self, train_objectives, epochs=1, steps_per_epoch=100, optimizer_class=torch.optim.AdamW, lr=1e-4):
        loaders = [loader for loader, _ in train_objectives]
        for loader in loaders:
            loader.collate_fn = self.collate
        loss_models = [loss for _, loss in train_objectives]
        for loss_model in loss_models:
            loss_model.to(self.device)
        optimizers = []
        for loss_model in loss_models:
            optimizers.append(optimizer_class(loss_model.parameters(), lr=lr))
        iterators = [iter(loader) for loader in loaders]
        for epoch in range(epochs):
            for _ in range(steps_per_epoch):
                for idx in range(len(train_objectives)):
                    loss_model = loss_models[idx]
                    optimizer = optimizers[idx]
                    try:
                        features, labels = next(iterators[idx])
                    except StopIteration:
                        iterators[idx] = iter(loaders[idx])
                        features, labels = next(iterators[idx])
                    features = [{key: value.to(self.device) for key, value in f.items()} for f in features]
                    loss_value = loss_model(features, labels.to(self.device))
                    loss_value.backward()
                    torch.nn.utils.clip_grad_norm_(loss_model.parameters(), 1.0)
                    optimizer.step()
                    optimizer.zero_grad()
