WHO = "port"
