package wasm

import (
	"bytes"
	"sync"

	"github.com/hashicorp/go-hclog"
)

// lineWriter turns a guest's stdout or stderr into log lines tagged with the
// plugin, so that a plugin's prints are never lost (Extism hides them by
// default; authors hunt for them) and never interleave mid-line.
type lineWriter struct {
	log    hclog.Logger
	plugin string
	stream string
	mu     sync.Mutex
	buf    []byte
	// said, when set, hears each line as it is logged (instance.heard).
	said func(line string)
	// allow, when set, says whether a line of n bytes may be logged
	// (instance.allowLog).
	allow func(n int) bool
}

const maxLine = 4 << 10

func newLineWriter(log hclog.Logger, plugin, stream string) *lineWriter {
	return &lineWriter{log: log, plugin: plugin, stream: stream}
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			w.buf = append(w.buf, p...)
			if len(w.buf) >= maxLine {
				w.emit()
			}
			break
		}
		w.buf = append(w.buf, p[:i]...)
		w.emit()
		p = p[i+1:]
	}
	return n, nil
}

// Flush logs a partial last line.
func (w *lineWriter) Flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.buf) > 0 {
		w.emit()
	}
}

func (w *lineWriter) emit() {
	line := w.buf
	if len(line) > maxLine {
		line = line[:maxLine]
	}
	lvl := hclog.Info
	if w.stream == "stderr" {
		lvl = hclog.Warn
	}
	text := CleanText(string(line))
	if w.said != nil {
		w.said(text)
	}
	if w.allow == nil || w.allow(len(line)) {
		w.log.Log(lvl, text, "plugin", w.plugin, "stream", w.stream)
	}
	w.buf = w.buf[:0]
}
