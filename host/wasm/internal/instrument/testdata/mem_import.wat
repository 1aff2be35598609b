(module
  (import "env" "memory" (memory 1))
  (func (export "f")))
