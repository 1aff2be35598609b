package reload

import (
	"path/filepath"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"
)

// DefaultDebounce is how long the watcher waits after the last change to a
// file before reloading: editors and deployers write a file in several
// operations (truncate, write, rename over), and a reload per operation
// would compile half a module.
const DefaultDebounce = 250 * time.Millisecond

// Func reloads the files that changed and returns those it could not load
// yet, each with when to try again (a plugin backing off after failures).
type Func func(changed map[string]bool) (later map[string]time.Time)

// Logger is what the watcher says about itself.
type Logger interface {
	Warn(msg string, args ...any)
}

// Watcher watches directories (not files: a file replaced by rename is a
// new file) and calls its Func with what changed, debounced.
type Watcher struct {
	w    *fsnotify.Watcher
	done chan struct{}
}

// Watch starts watching dirs. A change to a file Relevant names waits
// debounce for the next; then fn runs, at the lowest thread priority, and
// the files it says to try later are tried again when due (never sooner
// than debounce). Close stops it.
func Watch(dirs []string, debounce time.Duration, fn Func, log Logger) (*Watcher, error) {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, err
	}
	for _, dir := range dirs {
		if err := w.Add(dir); err != nil {
			w.Close()
			return nil, err
		}
	}
	x := &Watcher{w: w, done: make(chan struct{})}
	go func() {
		defer close(x.done)
		loop(w, debounce, fn, log)
	}()
	return x, nil
}

// Close stops watching and waits for the goroutine.
func (x *Watcher) Close() error {
	err := x.w.Close()
	<-x.done
	return err
}

func loop(w *fsnotify.Watcher, debounce time.Duration, fn Func, log Logger) {
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	changed := map[string]bool{}
	for {
		select {
		case ev, ok := <-w.Events:
			if !ok {
				return
			}
			if Relevant(ev.Name) {
				changed[ev.Name] = true
				timer.Reset(debounce)
			}
		case err, ok := <-w.Errors:
			if !ok {
				return
			}
			log.Warn("file watcher", "error", err)
		case <-timer.C:
			var later map[string]time.Time
			background(func() { later = fn(changed) })
			changed = map[string]bool{}
			// Files that failed recently wait out their backoff: keep them
			// and come back when it is over.
			var next time.Duration
			for path, at := range later {
				changed[path] = true
				if wait := time.Until(at); next == 0 || wait < next {
					next = max(wait, debounce)
				}
			}
			if next > 0 {
				timer.Reset(next)
			}
		}
	}
}

// Relevant reports whether a change to path may change the rules or the
// plugins: a rule file (.yaml, .yml), a module (.wasm), or the signature of
// one (.wasm.sig, .yaml.sig: a signature written after its file lets the
// file load). Editors' swap files and hidden files (a deployer's
// temporary) are not.
func Relevant(path string) bool {
	base := strings.TrimSuffix(filepath.Base(path), ".sig")
	if strings.HasPrefix(base, ".") {
		return false
	}
	return strings.HasSuffix(base, ".wasm") || strings.HasSuffix(base, ".yaml") || strings.HasSuffix(base, ".yml")
}
