import torch


def train(cfg, collector, model, optimizer, batches):
    model.to("neuron")
    if cfg.profiling.enabled:
        # porter: NRN111 the profiler activity "cuda" records nothing on Neuron; try ProfilerActivity.PrivateUse1 or the Neuron profiler
        collector.enable_profile(
            num_rollouts=cfg.profiling.num_rollouts,
            activities=["cpu", "cuda"] if cfg.profiling.profile_cuda else ["cpu"],
            record_shapes=True,
        )
    for batch in batches:
        loss = model(batch.to("neuron"))
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
