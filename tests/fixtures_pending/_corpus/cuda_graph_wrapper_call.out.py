from torchtitan.distributed.cudagraph import cudagraph_teardown, wrap_with_cuda_graph


class StepRunner:
    def __init__(self, config, model, optimizer):
        self.config = config
        self.model = model
        self.optimizer = optimizer
        self.step_fn = self._forward_backward
        if not config.training.disable_cuda_graphs:
            # porter: NRN104 torchtitan.distributed.cudagraph.wrap_with_cuda_graph: CUDA graphs are not available on Neuron (its own guard runs the step eagerly there); torch.compile(backend='neuron') compiles whole graphs
            self.step_fn = wrap_with_cuda_graph(self.step_fn)

    def _forward_backward(self, inputs, labels):
        loss = self.model(inputs, labels)
        loss.backward()
        return loss.detach()

    def train_step(self, inputs, labels):
        self.optimizer.zero_grad(set_to_none=self.config.training.disable_cuda_graphs)
        loss = self.step_fn(inputs, labels)
        self.optimizer.step()
        return loss

    def close(self):
        if not self.config.training.disable_cuda_graphs:
            cudagraph_teardown()
