// Command sim is the scooter example's telemetry simulator: it writes NDJSON
// events to stdout, one per scooter per tick, for `ruled run --events -`.
//
// Three scooters play out what the example rules react to:
//
//   - s-1's battery drains from 24% by 1% a tick: low-battery alerts once it
//     drops under 20, then limits its speed five minutes later unless...
//
//   - s-2's charger is connected after a while, which cancels its wait.
//
//   - s-3 is locked and starts moving: the alarm sounds, three times 30s
//     apart, unless it is unlocked (it is, after a minute).
//
//   - now and then a scooter speeds.
//
//     go run ./examples/scooter/sim -ticks 120 -every 2s | ruled run ... --events -
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"time"
)

type scooter struct {
	ID       string  `json:"vehicle"`
	Battery  float64 `json:"battery"`
	Charging bool    `json:"charging"`
	Locked   bool    `json:"locked"`
	Speed    float64 `json:"speed"`
	Lat      float64 `json:"lat"`
	Lon      float64 `json:"lon"`
}

func main() {
	ticks := flag.Int("ticks", 0, "ticks to simulate (0: forever)")
	every := flag.Duration("every", 2*time.Second, "time between ticks")
	flag.Parse()
	enc := json.NewEncoder(os.Stdout)
	fleet := []*scooter{
		{ID: "s-1", Battery: 24, Speed: 12, Lat: 52.52, Lon: 13.40},
		{ID: "s-2", Battery: 21, Speed: 8, Lat: 52.51, Lon: 13.39},
		{ID: "s-3", Battery: 80, Locked: true, Lat: 52.50, Lon: 13.41},
	}
	emit := func(topic string, v any) {
		m := map[string]any{"topic": topic, "time": time.Now().UTC().Format(time.RFC3339Nano)}
		b, _ := json.Marshal(v)
		json.Unmarshal(b, &m)
		m["topic"] = topic
		if err := enc.Encode(m); err != nil {
			fmt.Fprintln(os.Stderr, "sim:", err)
			os.Exit(1)
		}
	}
	for tick := 1; *ticks == 0 || tick <= *ticks; tick++ {
		for _, s := range fleet {
			if !s.Charging && s.Battery > 1 {
				s.Battery--
			}
			s.Lat += 0.0001
		}
		s2, s3 := fleet[1], fleet[2]
		switch tick {
		case 10:
			s2.Charging = true
			emit("scooter.charger.connected", map[string]any{"vehicle": s2.ID})
		case 5:
			s3.Speed = 6 // moving while locked
		case 35:
			s3.Locked, s3.Speed = false, 10
			emit("scooter.unlocked", map[string]any{"vehicle": s3.ID})
		}
		if tick%15 == 0 {
			fleet[0].Speed = 28
		} else {
			fleet[0].Speed = 12
		}
		for _, s := range fleet {
			emit("scooter.telemetry", s)
		}
		os.Stdout.Sync()
		time.Sleep(*every)
	}
}
