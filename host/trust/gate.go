package trust

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/ruled-dev/ruled/internal/regular"
)

// Places are where a Gate may require signatures: the plugins directory,
// the rules directory, and what `ruled deploy` put in Redis.
const (
	PlacePlugins = "plugins"
	PlaceRules   = "rules"
	PlaceDeploy  = "deploy"
)

// Places lists them, in the order the config's reference names them.
var Places = []string{PlacePlugins, PlaceRules, PlaceDeploy}

// ParsePlaces reads require-signatures' words: plugins, rules, deploy;
// "true" or "all" for the three, "false" or "none" for none.
func ParsePlaces(words []string) (map[string]bool, error) {
	out := map[string]bool{}
	for _, w := range words {
		switch w {
		case "true", "all":
			for _, p := range Places {
				out[p] = true
			}
		case "false", "none":
		case PlacePlugins, PlaceRules, PlaceDeploy:
			out[w] = true
		default:
			return nil, fmt.Errorf("%q is not a place signatures can be required: plugins, rules, deploy, or true for all", w)
		}
	}
	return out, nil
}

// Gate is a Keyring applied where the operator requires signatures. It
// checks a file against its signature, and remembers the files it refuses
// now and how many it refused by place and reason, so that status, the
// console and /metrics can show them. Its callers decide what keeps
// serving meanwhile (the last good version, always).
type Gate struct {
	ring    *Keyring
	require map[string]bool

	mu      sync.Mutex
	hook    func(Refusal)      // told of each new refusal (OnRefuse)
	refused map[string]Refusal // file → why it is refused now
	counts  map[string]uint64  // place + "\x00" + reason → refusals
}

// Refusal is a file refused now: which, where, why, when.
type Refusal struct {
	File   string    `json:"file"`
	Place  string    `json:"place"`
	Reason string    `json:"reason"`
	Key    string    `json:"key,omitempty"`
	Error  string    `json:"error"`
	At     time.Time `json:"at"`
}

// maxRefusals bounds the files a Gate remembers refusing: a directory of
// 100,000 unsigned files is counted whole, listed in part.
const maxRefusals = 256

// NewGate requires signatures at the places given, trusting ring. A place
// required with no key trusted is an error: nothing could ever load.
func NewGate(ring *Keyring, require map[string]bool) (*Gate, error) {
	req := map[string]bool{}
	for p, on := range require {
		if on {
			req[p] = true
		}
	}
	if len(req) > 0 && (ring == nil || len(ring.keys) == 0) {
		return nil, errors.New("trust: signatures are required but no key is trusted: add trusted-keys")
	}
	if ring == nil {
		ring = &Keyring{keys: map[string]PublicKey{}, revoked: map[string]bool{}}
	}
	return &Gate{ring: ring, require: req, refused: map[string]Refusal{}, counts: map[string]uint64{}}, nil
}

// Required reports whether place requires signatures; a nil Gate requires
// none.
func (g *Gate) Required(place string) bool { return g != nil && g.require[place] }

// ReadSig reads the signature file beside path: nil, nil when there is
// none. Only a regular file of at most MaxSig bytes is read
// (internal/regular): a FIFO named publish.wasm.sig is refused, not
// waited on. A caller refuses a file whose signature cannot be read as
// malformed.
func ReadSig(path string) ([]byte, error) {
	b, err := regular.ReadFile(path+SigSuffix, MaxSig)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if b == nil {
		b = []byte{} // present but empty: malformed, not unsigned
	}
	return b, nil
}

// Check verifies content, the file at path of place, against sig (nil:
// none). A place that requires nothing passes everything (key ""). A
// refusal is remembered and counted; a pass forgets the file's last
// refusal.
func (g *Gate) Check(place, path string, content, sig []byte) (string, error) {
	return g.check(place, path, filepath.Base(path), content, sig)
}

// CheckRead is Check of a signature ReadSig read, with its error: a
// signature file that could not be read (not a regular file, too large)
// refuses path as malformed, saying why.
func (g *Gate) CheckRead(place, path string, content, sig []byte, readErr error) (string, error) {
	if readErr != nil && g.Required(place) {
		err := &Error{File: path, Reason: ReasonMalformed, Detail: "its signature file: " + readErr.Error()}
		g.note(place, path, "", err)
		return "", err
	}
	return g.Check(place, path, content, sig)
}

// check is Check of content signed as name, remembered as path.
func (g *Gate) check(place, path, name string, content, sig []byte) (string, error) {
	if !g.Required(place) {
		return "", nil
	}
	key, err := g.ring.verify(name, path, content, sig)
	g.note(place, path, key, err)
	return key, err
}

// note remembers a check's outcome: a pass forgets path's refusal, a
// refusal is counted, remembered and, when new, told to the hook.
func (g *Gate) note(place, path, key string, err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if err == nil {
		delete(g.refused, path)
		return
	}
	reason := ReasonBad
	var te *Error
	if errors.As(err, &te) {
		reason = te.Reason
	}
	g.counts[place+"\x00"+reason]++
	f := Refusal{File: path, Place: place, Reason: reason, Key: key, Error: err.Error(), At: time.Now().UTC()}
	was, known := g.refused[path]
	if known || len(g.refused) < maxRefusals {
		g.refused[path] = f
	}
	if g.hook != nil && (!known || was.Reason != reason || was.Key != key) {
		// New, not the same refusal read again (a touch, a refresh).
		g.hook(f)
	}
}

// ReasonRollback is a deployment signed before the one a member serves:
// an older release sent again.
const ReasonRollback = "older than the deployment served"

// Refuse counts and remembers a refusal its caller decided (a rollback),
// for what at place, as Check does one.
func (g *Gate) Refuse(place, what, reason, detail string) error {
	err := &Error{File: what, Reason: reason, Detail: detail}
	if g != nil {
		g.note(place, what, "", err)
	}
	return err
}

// OnRefuse has fn told of each new refusal: a file refused that was not,
// or for another reason or key (the audit trail). fn must not block: it
// is called under the Gate's lock, so that refusals reach it in order.
func (g *Gate) OnRefuse(fn func(Refusal)) {
	if g == nil {
		return
	}
	g.mu.Lock()
	g.hook = fn
	g.mu.Unlock()
}

// Forget drops a file's refusal: the file is gone.
func (g *Gate) Forget(path string) {
	if g == nil {
		return
	}
	g.mu.Lock()
	delete(g.refused, path)
	g.mu.Unlock()
}

// ForgetPlace drops the refusals of place: a deployment that verified
// whole replaces every file the last refused one named.
func (g *Gate) ForgetPlace(place string) {
	if g == nil {
		return
	}
	g.mu.Lock()
	for f, r := range g.refused {
		if r.Place == place {
			delete(g.refused, f)
		}
	}
	g.mu.Unlock()
}

// Report is what a Gate shows: where signatures are required, which keys
// are trusted and revoked, the files refused now, and refusals counted by
// place and reason since the process started.
type Report struct {
	Required []string          `json:"required"`
	Keys     []string          `json:"trusted_keys"`
	Revoked  []string          `json:"revoked_keys,omitempty"`
	Refused  []Refusal         `json:"refused_files"`
	Counts   map[string]uint64 `json:"refusals"` // "place: reason" → count
}

// Report is the Gate's state now; nil for a nil Gate or one requiring
// nothing.
func (g *Gate) Report() *Report {
	if g == nil || len(g.require) == 0 {
		return nil
	}
	r := &Report{Refused: []Refusal{}, Counts: map[string]uint64{}}
	for _, p := range Places {
		if g.require[p] {
			r.Required = append(r.Required, p)
		}
	}
	for _, id := range g.ring.IDs() {
		if g.ring.Revoked(id) {
			continue
		}
		r.Keys = append(r.Keys, id)
	}
	for id := range g.ring.revoked {
		r.Revoked = append(r.Revoked, id)
	}
	sort.Strings(r.Revoked)
	g.mu.Lock()
	for _, f := range g.refused {
		r.Refused = append(r.Refused, f)
	}
	for k, n := range g.counts {
		place, reason, _ := strings.Cut(k, "\x00")
		r.Counts[place+": "+reason] = n
	}
	g.mu.Unlock()
	sort.Slice(r.Refused, func(i, j int) bool { return r.Refused[i].File < r.Refused[j].File })
	return r
}
