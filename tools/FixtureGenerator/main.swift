print("fixture generator: not written yet")
