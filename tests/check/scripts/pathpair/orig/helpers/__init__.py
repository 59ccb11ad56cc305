WHO = "orig"
