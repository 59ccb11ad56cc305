"""porter check: run a ported script on an emulated neuron device and prove it compiles and trains the same."""
