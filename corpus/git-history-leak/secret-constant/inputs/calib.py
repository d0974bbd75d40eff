def calibrate(raw):
    raise NotImplementedError("load the device constants")
