package seq

import (
	"strconv"
	"strings"

	"github.com/ruled-dev/ruled/host/keyspace"
	"github.com/ruled-dev/ruled/host/rules"
	"github.com/ruled-dev/ruled/host/seq/core"
)

// CooldownHash is where the keys in their rule's cooldown are kept:
// "<rule>\x00<key>" → when the cooldown ends (unix nanoseconds on the
// scheduler's clock). A cooldown is a promise across restarts ("notify at
// most once a day"): kept in memory only, a restart forgot it, and a 24 h
// cooldown notified again 3 h later (issue 37, 6).
const CooldownHash = keyspace.Cooldown

// ThrottleHash is where the throttles' states are kept: "<rule>\x00<key>"
// → the key's theoretical arrival time (unix nanoseconds), while it is at
// its limit.
const ThrottleHash = keyspace.Throttle

// kept is a key's time to keep in the store (effects.keep): when its
// cooldown ends (CooldownHash), or its throttle's theoretical arrival
// time (ThrottleHash). lost is the warning when it cannot be written.
type kept struct {
	hash, rule, key string
	until           int64 // unix nanoseconds
	lost            string
}

// keepCooldown asks for key's cooldown under rule r, which ends at until,
// to be kept: a run of the key has started, and its cooldown with it. A
// run replayed after a restart begins none.
func (fx *effects) keepCooldown(r *rules.Rule, key string, until int64) {
	if r.Cooldown > 0 {
		fx.keep = append(fx.keep, kept{CooldownHash, r.ID, key, until, "cannot keep a key's cooldown; a restart now ends it"})
	}
}

// keepThrottle asks for key's throttle state (cell) to be kept when the
// key is at its limit at now (its next trigger would wait), so that a
// restart does not give it a fresh burst.
func (fx *effects) keepThrottle(rule, key string, cell core.Cell, th rules.Throttle, now int64) {
	if cell.AtLimit(now, th) {
		fx.keep = append(fx.keep, kept{ThrottleHash, rule, key, cell.TAT, "cannot keep a throttle's state; a restart gives its key a fresh burst"})
	}
}

// keepTime writes a key's time under hash (CooldownHash, ThrottleHash).
func (s *PendingStore) keepTime(hash, rule, key string, until int64) error {
	return s.h.HSet(hash, rule+"\x00"+key, strconv.FormatInt(until, 10))
}

// times reads the keys' times kept under hash that are still ahead of
// now, by rule and key, and removes the others.
func (s *PendingStore) times(hash string, now int64) (map[[2]string]int64, error) {
	all, err := s.h.HGetAll(hash)
	if err != nil {
		return nil, err
	}
	out := map[[2]string]int64{}
	var stale []string
	for f, v := range all {
		rule, key, ok := strings.Cut(f, "\x00")
		until, err := strconv.ParseInt(v, 10, 64)
		if !ok || err != nil || until <= now {
			stale = append(stale, f)
			continue
		}
		out[[2]string{rule, key}] = until
	}
	if len(stale) > 0 {
		s.h.HDel(hash, stale...)
	}
	return out, nil
}

// loadTimes reads the cooldowns and throttles' states a previous process
// kept: a key in its cooldown, or at its throttle's limit, when it stopped
// is still. Those over by now go.
func (rn *Runner) loadTimes() {
	if rn.store == nil {
		return
	}
	now := rn.sch.Now().UnixNano()
	cooling, err := rn.store.times(CooldownHash, now)
	if err != nil {
		rn.log.Warn("cannot read the keys' cooldowns; they end at this start", "error", err)
	}
	throttled, err := rn.store.times(ThrottleHash, now)
	if err != nil {
		rn.log.Warn("cannot read the throttles' states; their keys start with a fresh burst", "error", err)
	}
	rn.apply(func(*effects) {
		for k, until := range cooling {
			ks := rn.m.rule(k[0]).key(k[1])
			ks.cooldownUntil = max(ks.cooldownUntil, until)
		}
		for k, tat := range throttled {
			m := rn.m.rule(k[0]).key(k[1]).more()
			m.throttle.TAT = max(m.throttle.TAT, tat)
		}
	})
}
