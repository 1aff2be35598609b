package seq

import (
	"strconv"
	"strings"

	"github.com/ruled-dev/ruled/host/keyspace"
	"github.com/ruled-dev/ruled/host/rules"
)

// CooldownHash is where the keys in their rule's cooldown are kept:
// "<rule>\x00<key>" → when the cooldown ends (unix nanoseconds on the
// scheduler's clock). A cooldown is a promise across restarts ("notify at
// most once a day"): kept in memory only, a restart forgot it, and a 24 h
// cooldown notified again 3 h later (issue 37, 6).
const CooldownHash = keyspace.Cooldown

// cooldown is one key's cooldown begun, to be written.
type cooldown struct {
	field string
	until int64
}

// coolLocked notes, for the store, that a run of r's key has started
// and its cooldown with it. The write is the next schedule's, outside
// the lock; a run replayed after a restart begins none.
func (rn *Runner) coolLocked(r *rules.Rule, key string, ks *keyState) {
	if r.Cooldown <= 0 || rn.store == nil {
		return
	}
	rn.cooling = append(rn.cooling, cooldown{r.ID + "\x00" + key, ks.cooldownUntil})
}

// keepCooldowns writes the cooldowns begun. One that cannot be written
// is logged: its key's cooldown then ends at a restart.
func (rn *Runner) keepCooldowns(cs []cooldown) {
	for _, c := range cs {
		if err := rn.store.h.HSet(CooldownHash, c.field, strconv.FormatInt(c.until, 10)); err != nil {
			rule, key, _ := strings.Cut(c.field, "\x00")
			rn.log.Warn("cannot keep a key's cooldown; a restart now ends it", "rule", rule, "key", key, "error", err)
		}
	}
}

// loadCooldowns reads the cooldowns a previous process kept: a key in
// its cooldown when it stopped is still in it. Cooldowns over by now go.
func (rn *Runner) loadCooldowns() {
	if rn.store == nil {
		return
	}
	all, err := rn.store.h.HGetAll(CooldownHash)
	if err != nil {
		rn.log.Warn("cannot read the keys' cooldowns; they end at this start", "error", err)
		return
	}
	now := rn.sch.Now().UnixNano()
	var stale []string
	rn.apply(func(*effects) {
		for f, v := range all {
			rule, key, ok := strings.Cut(f, "\x00")
			until, err := strconv.ParseInt(v, 10, 64)
			if !ok || err != nil || until <= now {
				stale = append(stale, f)
				continue
			}
			ks := rn.rule(rule).key(key)
			ks.cooldownUntil = max(ks.cooldownUntil, until)
		}
	})
	if len(stale) > 0 {
		rn.store.h.HDel(CooldownHash, stale...)
	}
}
