package catalog

import (
	"sort"

	"github.com/ruled-dev/ruled/abi"
	"github.com/ruled-dev/ruled/host/status"
)

// Status reports every plugin: loaded ones with their digest and reload
// history, files that never loaded with their error, and, from pinned
// (digest → what references it), which old digests are kept for what.
func (c *Catalog) Status(pinned map[string]*status.PinnedBy) []status.PluginStatus {
	current := c.Current()
	var out []status.PluginStatus
	statusOf := func(p *plugin) status.PluginStatus {
		ps := status.PluginStatus{Name: p.name, File: p.file, Granted: []string{}}
		ps.History, ps.LastError = p.snapshot()
		return ps
	}
	for _, name := range c.Plugins() {
		p := c.plugin(name)
		ps := statusOf(p)
		m := p.slot.Module()
		ps.Loaded, ps.Digest, ps.ABI = true, m.Digest(), "v"+abi.VersionString(m.ABIVersion())
		p.mu.Lock()
		ps.SignedBy = p.signer
		p.mu.Unlock()
		for _, f := range m.Descriptor().Functions {
			ps.Functions = append(ps.Functions, f.Kind+" "+f.Name)
		}
		for _, cp := range m.Granted() {
			ps.Granted = append(ps.Granted, string(cp))
		}
		ps.Live, ps.Denied, ps.Failures, ps.LogDropped = m.Live(), m.Denied(), m.Failures(), m.LogDropped()
		for _, ev := range ps.History {
			if by := pinned[ev.Digest]; by != nil && ev.OK && current[ev.Digest] == "" {
				if ps.Pinned == nil {
					ps.Pinned = map[string]*status.PinnedBy{}
				}
				ps.Pinned[ev.Digest] = by
			}
		}
		out = append(out, ps)
	}
	c.mu.Lock()
	for _, p := range c.failed {
		out = append(out, statusOf(p))
	}
	c.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
