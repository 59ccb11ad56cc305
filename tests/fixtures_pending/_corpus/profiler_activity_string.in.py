import torch


def train(cfg, collector, model, optimizer, batches):
    model.to("cuda")
    if cfg.profiling.enabled:
        collector.enable_profile(
            num_rollouts=cfg.profiling.num_rollouts,
            activities=["cpu", "cuda"] if cfg.profiling.profile_cuda else ["cpu"],
            record_shapes=True,
        )
    for batch in batches:
        loss = model(batch.to("cuda"))
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
