"""Graph attention network (or GCN) for node classification on a Cora-format citation graph.

Layers are written with plain torch ops over a dense, normalised adjacency matrix. Full-batch
training: one optimizer step per epoch, validation every epoch, early stopping on the validation
loss with a checkpoint per epoch (older ones are deleted).

    python make_data.py data
    python train.py --path data/ --dataset synth --epochs 200
"""
import argparse
import glob
import os
import random
import tempfile
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim


def encode_onehot(labels):
    classes = sorted(set(labels))
    index = {c: i for i, c in enumerate(classes)}
    onehot = np.zeros((len(labels), len(classes)), dtype=np.int32)
    onehot[np.arange(len(labels)), [index[c] for c in labels]] = 1
    return onehot


def normalize_rows(mx):
    rowsum = mx.sum(1, keepdims=True)
    rowsum[rowsum == 0] = 1.0
    return mx / rowsum


def load_data(path="./data/", dataset="synth"):
    """Features, symmetric normalised adjacency (with self loops), labels and the three splits."""
    print(f"Loading {dataset} dataset...")
    content = np.genfromtxt(f"{path}{dataset}.content", dtype=np.dtype(str))
    features = content[:, 1:-1].astype(np.float32)
    labels = encode_onehot(list(content[:, -1]))
    idx = np.array(content[:, 0], dtype=np.int32)
    idx_map = {j: i for i, j in enumerate(idx)}
    edges_unordered = np.genfromtxt(f"{path}{dataset}.cites", dtype=np.int32)
    edges = np.array([idx_map[e] for e in edges_unordered.flatten()], dtype=np.int32).reshape(edges_unordered.shape)
    n = labels.shape[0]
    adj = np.zeros((n, n), dtype=np.float32)
    adj[edges[:, 0], edges[:, 1]] = 1.0
    adj = np.maximum(adj, adj.T)
    adj = normalize_rows(adj + np.eye(n, dtype=np.float32))
    features = normalize_rows(features)
    third = n // 3
    idx_train = torch.arange(0, third)
    idx_val = torch.arange(third, 2 * third)
    idx_test = torch.arange(2 * third, n)
    return (torch.from_numpy(adj), torch.from_numpy(features), torch.from_numpy(np.where(labels)[1]).long(),
            idx_train, idx_val, idx_test)


class GraphConvolution(nn.Module):
    def __init__(self, in_features, out_features, bias=True):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(in_features, out_features))
        self.bias = nn.Parameter(torch.empty(out_features)) if bias else None
        bound = 1.0 / out_features ** 0.5
        nn.init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            nn.init.uniform_(self.bias, -bound, bound)

    def forward(self, x, adj):
        out = adj @ (x @ self.weight)
        return out + self.bias if self.bias is not None else out


class GraphAttentionLayer(nn.Module):
    """One attention head: e_ij = LeakyReLU(a^T [W h_i || W h_j]) over the edges of adj."""

    def __init__(self, in_features, out_features, dropout, alpha, concat=True):
        super().__init__()
        self.dropout = dropout
        self.out_features = out_features
        self.concat = concat
        self.W = nn.Parameter(torch.empty(in_features, out_features))
        self.a = nn.Parameter(torch.empty(2 * out_features, 1))
        nn.init.xavier_uniform_(self.W, gain=1.414)
        nn.init.xavier_uniform_(self.a, gain=1.414)
        self.leakyrelu = nn.LeakyReLU(alpha)

    def forward(self, h, adj):
        Wh = h @ self.W
        src = Wh @ self.a[: self.out_features]
        dst = Wh @ self.a[self.out_features:]
        e = self.leakyrelu(src + dst.T)
        attention = torch.where(adj > 0, e, torch.full_like(e, -9e15))
        attention = F.softmax(attention, dim=1)
        attention = F.dropout(attention, self.dropout, training=self.training)
        h_prime = attention @ Wh
        return F.elu(h_prime) if self.concat else h_prime


class GAT(nn.Module):
    def __init__(self, nfeat, nhid, nclass, dropout, alpha, nheads):
        super().__init__()
        self.dropout = dropout
        self.attentions = nn.ModuleList(
            [GraphAttentionLayer(nfeat, nhid, dropout=dropout, alpha=alpha, concat=True) for _ in range(nheads)])
        self.out_att = GraphAttentionLayer(nhid * nheads, nclass, dropout=dropout, alpha=alpha, concat=False)

    def forward(self, x, adj):
        x = F.dropout(x, self.dropout, training=self.training)
        x = torch.cat([att(x, adj) for att in self.attentions], dim=1)
        x = F.dropout(x, self.dropout, training=self.training)
        x = F.elu(self.out_att(x, adj))
        return F.log_softmax(x, dim=1)


class GCN(nn.Module):
    def __init__(self, nfeat, nhid, nclass, dropout):
        super().__init__()
        self.gc1 = GraphConvolution(nfeat, nhid)
        self.gc2 = GraphConvolution(nhid, nclass)
        self.dropout = dropout

    def forward(self, x, adj):
        x = F.relu(self.gc1(x, adj))
        x = F.dropout(x, self.dropout, training=self.training)
        return F.log_softmax(self.gc2(x, adj), dim=1)


def accuracy(output, labels):
    preds = output.max(1)[1].type_as(labels)
    correct = preds.eq(labels).double()
    return correct.sum() / len(labels)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--no-cuda", action="store_true", default=False, help="Disables CUDA training.")
    parser.add_argument("--fastmode", action="store_true", default=False, help="Validate during training pass.")
    parser.add_argument("--model", default="gat", choices=["gat", "gcn"])
    parser.add_argument("--path", default="./data/", help="folder holding <dataset>.content and <dataset>.cites")
    parser.add_argument("--dataset", default="synth")
    parser.add_argument("--seed", type=int, default=72)
    parser.add_argument("--epochs", type=int, default=int(os.environ.get("STEPS", 10)))
    parser.add_argument("--lr", type=float, default=0.005)
    parser.add_argument("--weight_decay", type=float, default=5e-4)
    parser.add_argument("--hidden", type=int, default=8)
    parser.add_argument("--nb_heads", type=int, default=4)
    parser.add_argument("--dropout", type=float, default=0.6)
    parser.add_argument("--alpha", type=float, default=0.2, help="LeakyReLU slope")
    parser.add_argument("--patience", type=int, default=100)
    parser.add_argument("--out-dir", default=None, help="checkpoint folder (default: a fresh temp dir)")
    args = parser.parse_args()
    args.cuda = not args.no_cuda and torch.cuda.is_available()
    out_dir = args.out_dir or tempfile.mkdtemp(prefix="gnn_")

    random.seed(args.seed)
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)
    if args.cuda:
        torch.cuda.manual_seed(args.seed)

    adj, features, labels, idx_train, idx_val, idx_test = load_data(args.path, args.dataset)
    nclass = int(labels.max()) + 1
    if args.model == "gat":
        model = GAT(features.shape[1], args.hidden, nclass, args.dropout, args.alpha, args.nb_heads)
    else:
        model = GCN(features.shape[1], args.hidden, nclass, args.dropout)
    optimizer = optim.Adam(model.parameters(), lr=args.lr, weight_decay=args.weight_decay)

    if args.cuda:
        model.cuda()
        features = features.cuda()
        adj = adj.cuda()
        labels = labels.cuda()
        idx_train = idx_train.cuda()
        idx_val = idx_val.cuda()
        idx_test = idx_test.cuda()

    def train(epoch):
        t = time.time()
        model.train()
        optimizer.zero_grad()
        output = model(features, adj)
        loss_train = F.nll_loss(output[idx_train], labels[idx_train])
        acc_train = accuracy(output[idx_train], labels[idx_train])
        loss_train.backward()
        optimizer.step()
        if not args.fastmode:
            model.eval()
            output = model(features, adj)
        loss_val = F.nll_loss(output[idx_val], labels[idx_val])
        acc_val = accuracy(output[idx_val], labels[idx_val])
        print(f"Epoch: {epoch + 1:04d} loss_train: {loss_train.data.item():.4f} acc_train: {acc_train.data.item():.4f} "
              f"loss_val: {loss_val.data.item():.4f} acc_val: {acc_val.data.item():.4f} time: {time.time() - t:.4f}s")
        return loss_val.data.item()

    def compute_test():
        model.eval()
        output = model(features, adj)
        loss_test = F.nll_loss(output[idx_test], labels[idx_test])
        acc_test = accuracy(output[idx_test], labels[idx_test])
        print(f"Test set results: loss= {loss_test.data.item():.4f} accuracy= {acc_test.data.item():.4f}")

    t_total = time.time()
    loss_values = []
    bad_counter = 0
    best = args.epochs + 1
    best_epoch = 0
    for epoch in range(args.epochs):
        loss_values.append(train(epoch))
        torch.save(model.state_dict(), os.path.join(out_dir, f"{epoch}.pkl"))
        if loss_values[-1] < best:
            best = loss_values[-1]
            best_epoch = epoch
            bad_counter = 0
        else:
            bad_counter += 1
        if bad_counter == args.patience:
            break
        for file in glob.glob(os.path.join(out_dir, "*.pkl")):
            if int(os.path.basename(file).split(".")[0]) < best_epoch:
                os.remove(file)
    for file in glob.glob(os.path.join(out_dir, "*.pkl")):
        if int(os.path.basename(file).split(".")[0]) > best_epoch:
            os.remove(file)
    print("Optimization Finished!")
    print(f"Total time elapsed: {time.time() - t_total:.4f}s")
    print(f"Loading {best_epoch}th epoch")
    model.load_state_dict(torch.load(os.path.join(out_dir, f"{best_epoch}.pkl")))
    compute_test()


if __name__ == "__main__":
    main()
