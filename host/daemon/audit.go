package daemon

import (
	"context"
	"os"

	"github.com/ruled-dev/ruled/host/api"
	"github.com/ruled-dev/ruled/host/audit"
	"github.com/ruled-dev/ruled/host/store"
	"github.com/ruled-dev/ruled/host/trust"
	"github.com/ruled-dev/ruled/internal/lograte"
)

// auditChain is the store's audit chain: what the Trail appends to and the
// API reads.
type auditChain interface {
	audit.Log
	AuditRead(ctx context.Context, from uint64, limit int) (*store.AuditChain, error)
}

// auditLog is the store's chain: Redis's, shared by a fleet and ruled
// deploy, or the embedded store's.
func (d *Daemon) auditLog() api.AuditReader {
	if c := d.auditChain(); c != nil {
		return c
	}
	return nil
}

func (d *Daemon) auditChain() auditChain {
	switch {
	case d.redis != nil:
		return d.redis.Audit()
	case d.bolt != nil:
		return d.bolt
	}
	return nil
}

// openAudit starts the audit trail over the store (its goroutine ends
// with the closers, before the store closes) and has the signatures'
// gate record each file it refuses.
func (d *Daemon) openAudit() {
	c := d.auditChain()
	if c == nil {
		return
	}
	var warns lograte.Limiter
	d.audit = audit.NewTrail(c, d.cfg.Audit, func(msg string, args ...any) {
		if folded, ok := warns.Allow("append"); ok {
			d.log.Warn(msg, append(args, "folded", folded)...)
		}
	})
	d.closers = append(d.closers, func() error { d.audit.Close(); return nil })
	host, _ := os.Hostname()
	d.cfg.Signatures.Gate.OnRefuse(func(f trust.Refusal) {
		what := audit.Refused
		if f.Place == trust.PlaceDeploy {
			what = audit.DeployRefused
		}
		d.audit.Record(audit.Entry{At: f.At, Who: "ruled", From: host, What: what, Detail: f.Error})
	})
}
