"""After a port: environment doctor, model-card records of a check, and the gate that reads them."""
