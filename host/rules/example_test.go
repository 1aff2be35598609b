package rules_test

import (
	"fmt"

	"github.com/ruled-dev/ruled/host/rules"
)

func ExampleParseFile() {
	const file = `
- id: low-battery
  on: scooter.telemetry
  when: battery < 20
  key: vehicle
  steps:
    - name: warn
      do: publish.publish
      with: {topic: "alerts.{{vehicle}}"}
    - after: 30m
      durable: true
      do: publish.publish
      with: {topic: depot.pickup}
- id: typo
  on: scooter.telemetry
  steps:
    - do: log.log
      delay: 5m
`
	// A nil catalog checks the format only, not that the plugins exist.
	rules, errs := rules.ParseFile("scooter.yaml", []byte(file), nil)
	for _, r := range rules {
		fmt.Println(r.ID, r.On, "when", r.When.Plugin+"."+r.When.Function, string(r.When.With))
		for _, s := range r.Steps {
			fmt.Printf("  step %s: %s.%s %s after %v durable %v\n", s.Name, s.Do.Plugin, s.Do.Function, s.Do.With, s.After, s.Durable)
		}
	}
	for _, e := range errs {
		fmt.Println(e)
	}
	// Output:
	// low-battery [scooter.telemetry] when expr.expr {"expr":"battery < 20"}
	//   step warn: publish.publish {"topic":"alerts.{{vehicle}}"} after 0s durable false
	//   step 1: publish.publish {"topic":"depot.pickup"} after 30m0s durable true
	// scooter.yaml:18:7: unknown key "delay" in a step (hint: did you mean after?)
}
