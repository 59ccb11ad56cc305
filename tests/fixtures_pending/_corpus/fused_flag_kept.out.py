import torch


def make_optimizers(world_model, actor, device, lr):
    use_fused = device.type == "neuron"
    world_opt = torch.optim.Adam(world_model.parameters(), lr=lr, fused=use_fused)
    actor_opt = torch.optim.Adam(actor.parameters(), lr=lr, fused=use_fused)
    return world_opt, actor_opt


def train(world_model, actor, loader, device, lr):
    world_opt, actor_opt = make_optimizers(world_model, actor, device, lr)
    for batch in loader:
        loss = world_model(batch).mean() + actor(batch).mean()
        loss.backward()
        world_opt.step()
        actor_opt.step()
