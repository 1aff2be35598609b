package seq

import "github.com/ruled-dev/ruled/internal/fastjson"

// decodeFast decodes a record as its writer writes it (json.Marshal of
// Pending: known keys, plain strings, whole numbers) into p, and reports
// whether it could. Anything else — an escape in a string, an unknown or
// differently cased key, a null, a fraction — is left to json.Unmarshal:
// the fast path never decides what a record means, it only skips
// reflection for the records this ruled wrote. A restart reads every
// record once, and json.Unmarshal took 10 µs a record: a second for
// 100,000 parked runs (issue 38). FuzzDecodeFast holds it to
// json.Unmarshal's answer.
//
// names, when not nil, keeps the strings many records share once.
func decodeFast(b []byte, p *Pending, names map[string]string) bool {
	d := fastjson.New(b)
	return d.Object(func(key []byte) bool {
		switch string(key) {
		case "v":
			return d.Int(&p.Version)
		case "id":
			return d.String(&p.ID)
		case "rule":
			return d.Name(&p.Rule, names)
		case "source":
			return d.Name(&p.Source, names)
		case "step-name":
			return d.Name(&p.Step, names)
		case "step":
			return d.Int(&p.StepIndex)
		case "iter":
			return d.Int(&p.Iter)
		case "attempt":
			return d.Int(&p.Attempt)
		case "fire-at":
			return d.Int64(&p.FireAt)
		case "written-at":
			return d.Int64(&p.WrittenAt)
		case "remaining-ms":
			return d.Int64(&p.Remaining)
		case "fingerprint":
			return d.Name(&p.Fingerprint, names)
		case "digest":
			return d.Name(&p.Digest, names)
		case "key":
			return d.String(&p.Key)
		case "event-id":
			return d.String(&p.EventID)
		case "event-time":
			return d.Int64(&p.EventTime)
		case "event":
			return d.Raw(&p.Event)
		case "wait-key":
			return d.String(&p.WaitKey)
		case "hops":
			return d.Int(&p.Hops)
		case "trace":
			return d.String(&p.Trace)
		case "started":
			return d.Int64(&p.Started)
		case "parent":
			return d.String(&p.Parent)
		case "node":
			return d.Int(&p.Node)
		case "delay-node":
			return d.Int(&p.DelayNode)
		case "debounce":
			return d.Int64(&p.Debounce)
		case "finally":
			return d.String(&p.Finally)
		case "steps":
			return d.Raw(&p.Steps)
		case "vars":
			return d.Raw(&p.Vars)
		case "previous":
			return d.Raw(&p.Previous)
		}
		return false
	})
}
