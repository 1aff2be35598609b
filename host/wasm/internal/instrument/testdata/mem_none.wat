(module
  (func (export "f")))
