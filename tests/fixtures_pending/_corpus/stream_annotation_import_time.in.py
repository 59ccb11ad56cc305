"""A side-stream pool whose property is annotated with the stream class (shaped like torchtitan's
distributed/cudagraph.py manager): the return annotation is evaluated when the class is defined."""
import torch


class _SidePool:
    """Owns one side stream for the warm-up passes."""

    def __init__(self) -> None:
        self._side: torch.cuda.Stream | None = None

    @property
    def side(self) -> torch.cuda.Stream:
        assert self._side is not None
        return self._side

    def ensure(self) -> None:
        if self._side is None:
            self._side = torch.cuda.Stream()

    def run(self, fn, *args):
        self.ensure()
        current = torch.cuda.current_stream()
        self.side.wait_stream(current)
        with torch.cuda.stream(self.side):
            out = fn(*args)
        current.wait_stream(self.side)
        return out
