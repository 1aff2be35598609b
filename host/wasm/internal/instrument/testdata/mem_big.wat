(module
  (memory 20 100))
