package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/ruled-dev/ruled/host/status"
)

const stateRules = `
- id: noop
  on: door.*
  mode: parallel
  steps:
    - do: log.log
      with: {message: "DOOR {{open}}"}
`

// TestEntityState: the daemon keeps each entity's latest event — a door
// by its topic, a scooter by its topic and key field —, lists and shows
// them (ruled state ls|show, GET /v1/state), counts reports and changes
// in ruled status, and has them back after a kill -9, on bbolt and on
// Redis. A report that changes nothing moves only "last seen".
func TestEntityState(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	stores(t, func(t *testing.T, storeArgs func() []string) {
		rules, plugins := fixture(t, stateRules)
		data := t.TempDir()
		args := append([]string{"--rules", rules, "--plugins", plugins, "--state-key", "scooter.telemetry=vehicle"}, storeArgs()...)
		a := startRuled(t, data, args...)
		a.post(`{"topic":"door.front","open":true}`, `{"topic":"door.back","open":false}`,
			`{"topic":"scooter.telemetry","vehicle":"sc-1","battery":80}`, `{"topic":"scooter.telemetry","vehicle":"sc-2","battery":50}`)
		a.waitLog("DOOR", 2)
		first := a.entity("door.front")
		a.post(`{"topic":"door.front","open":true,"id":"again"}`, `{"topic":"scooter.telemetry","vehicle":"sc-1","battery":79}`)
		a.waitLog("DOOR", 3)
		again := a.entity("door.front")
		if !again.Changed.Equal(first.Changed) || !again.Seen.After(first.Seen) {
			t.Errorf("a repeated report: changed %v → %v, seen %v → %v; want changed kept, seen moved", first.Changed, again.Changed, first.Seen, again.Seen)
		}
		code, out, errs := runCLI(t, "", "state", "ls", "--data", data, "--prefix", "scooter.")
		if code != 0 || !strings.Contains(out, "scooter.telemetry/sc-1") || !strings.Contains(out, `"battery":79`) || !strings.Contains(out, "2 entities") {
			t.Errorf("state ls --prefix scooter.: %d %q %q", code, out, errs)
		}
		if code, out, errs := runCLI(t, "", "state", "show", "--data", data, "door.back"); code != 0 || !strings.Contains(out, `"open": false`) {
			t.Errorf("state show door.back: %d %q %q", code, out, errs)
		}
		if code, _, errs := runCLI(t, "", "state", "show", "--data", data, "door.side"); code != 1 || !strings.Contains(errs, `no entity "door.side"`) {
			t.Errorf("state show of an unknown entity: %d %q", code, errs)
		}
		code, out, _ = runCLI(t, "", "status", "--data", data)
		if code != 0 || !strings.Contains(out, "state: 4 entities of 10000") || !strings.Contains(out, "6 reports, 5 changes") {
			t.Errorf("status: %q", out)
		}
		if m := a.metricLines("ruled_state_entities"); !strings.Contains(m, "ruled_state_entities 4") {
			t.Errorf("metrics: %q", m)
		}
		time.Sleep(100 * time.Millisecond) // past the write's 10 ms
		a.kill()
		b := startRuled(t, data, args...)
		if e := b.entity("scooter.telemetry/sc-1"); !strings.Contains(compact(e.State), `"battery":79`) {
			t.Errorf("after kill -9: %s", e.State)
		}
		if e := b.entity("door.front"); !e.Changed.Equal(first.Changed.Truncate(time.Millisecond)) {
			t.Errorf("after kill -9, door.front changed %v, want %v", e.Changed, first.Changed)
		}
		// ruled state rm forgets an entity, in the store before it answers:
		// a kill -9 right after does not bring it back.
		if code, out, errs := runCLI(t, "", "state", "rm", "--data", data, "door.back"); code != 0 || out != "forgot door.back\n" {
			t.Errorf("state rm door.back: %d %q %q", code, out, errs)
		}
		if code, _, errs := runCLI(t, "", "state", "rm", "--data", data, "door.side"); code != 1 || !strings.Contains(errs, `no entity "door.side"`) {
			t.Errorf("state rm of an unknown entity: %d %q", code, errs)
		}
		b.kill()
		c := startRuled(t, data, args...)
		defer c.term()
		var gone status.Entity
		if err := apiGet(context.Background(), data, "/v1/state/door.back", &gone); err == nil || !strings.Contains(err.Error(), "no entity") {
			t.Errorf("door.back after state rm and kill -9: %+v, %v; want none", gone, err)
		}
		c.entity("door.front")
	})
}

// entity is GET /v1/state/{id}.
func (p *proc) entity(id string) status.Entity {
	p.t.Helper()
	var e status.Entity
	if err := apiGet(context.Background(), p.data, "/v1/state/"+id, &e); err != nil {
		p.t.Fatalf("GET /v1/state/%s: %v", id, err)
	}
	if e.ID != id {
		b, _ := json.Marshal(e)
		p.t.Fatalf("GET /v1/state/%s: %s", id, b)
	}
	return e
}

const holdRules = `
- id: left-open
  on: {topic: door.front, changes: open, to: true, for: 3s}
  steps:
    - do: log.log
      with: {message: "LEFT OPEN {{open}}"}
`

// TestHoldSurvivesKill9: a hold (a change trigger with for:) begun before
// a kill -9 runs once after the restart, at its time (3 s after the door
// opened, not 3 s after the start); a hold whose door closed while the
// daemon was down (the report written, then the kill) runs nothing. On
// bbolt and on Redis.
func TestHoldSurvivesKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	stores(t, func(t *testing.T, storeArgs func() []string) {
		rules, plugins := fixture(t, holdRules)
		data := t.TempDir()
		args := append([]string{"--rules", rules, "--plugins", plugins}, storeArgs()...)
		a := startRuled(t, data, args...)
		opened := time.Now()
		a.post(`{"topic":"door.front","open":true}`)
		time.Sleep(500 * time.Millisecond)
		if st := a.status(); st.Holds == nil || st.Holds.Running != 1 {
			t.Fatalf("holds before the kill: %+v", st.Holds)
		}
		a.kill()
		b := startRuled(t, data, args...)
		b.waitLogWithin("LEFT OPEN true", 1, 10*time.Second)
		if took := time.Since(opened); took < 3*time.Second {
			t.Errorf("ran %v after the door opened, before its 3 s", took)
		}
		time.Sleep(500 * time.Millisecond)
		if n := strings.Count(a.out.String()+b.out.String(), "LEFT OPEN"); n != 1 {
			t.Errorf("ran %d times, want once", n)
		}
		// Open again, then closed; killed before its time: nothing runs.
		b.post(`{"topic":"door.front","open":false}`, `{"topic":"door.front","open":true}`)
		time.Sleep(300 * time.Millisecond)
		b.post(`{"topic":"door.front","open":false}`)
		time.Sleep(300 * time.Millisecond)
		b.kill()
		c := startRuled(t, data, args...)
		defer c.term()
		time.Sleep(4 * time.Second)
		if n := strings.Count(c.out.String(), "LEFT OPEN"); n != 0 {
			t.Errorf("a hold cancelled before the kill ran %d times after it", n)
		}
	})
}

// status is GET /v1/status.
func (p *proc) status() status.Status {
	p.t.Helper()
	var st status.Status
	if err := apiGet(context.Background(), p.data, "/v1/status", &st); err != nil {
		p.t.Fatal(err)
	}
	return st
}
