package bus

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
)

// ReadNDJSON reads newline-delimited events from r (`ruled run --events
// FILE|-`), decodes each with dec (nil: a zero Decoder) and hands it to sink,
// in order and on the caller's goroutine, until r ends. It returns how many
// events sink took and how many were refused.
//
// A line that is not an event is refused, reported to onReject (when not nil)
// with its 1-based line number and a *Rejection, and reading goes on: one bad
// line in a recording must not lose the rest. Blank lines are skipped but
// counted in the numbering. A line longer than dec's MaxSize (not counting its
// line ending) is refused as too large without being held in memory, and
// reading resumes at the next newline.
//
// sink may refuse an event by returning a *Rejection: it is counted and
// reported like a decoding refusal. Any other error from sink stops the read
// and is returned with its line number, as is a read error or ctx's error
// (checked before each line).
func ReadNDJSON(ctx context.Context, r io.Reader, dec *Decoder, sink func(*Event) error, onReject func(line int, err error)) (accepted, rejected int, err error) {
	if dec == nil {
		dec = &defaultDecoder
	}
	in := ingester{dec: dec, sink: sink, onReject: onReject}
	_, err = in.readLines(ctx, r)
	return in.accepted, in.rejected, err
}

// ingester is the part of ingest HTTP and NDJSON share: decode one event,
// hand it on, count.
type ingester struct {
	dec      *Decoder
	sink     func(*Event) error
	onReject func(line int, err error)
	counters *Counters // may be nil
	// sinkAll, when set, takes events in groups (Ingest.SinkAll); group
	// is the one being gathered, lines their line numbers.
	sinkAll func([]*Event) (int, error)
	group   []*Event
	lines   []int

	accepted, rejected int
	// single: the body is one event (application/json), so data after
	// it is most likely a second event sent without NDJSON's type.
	single bool
	// trace is the request's traceparent (canonical), given to every
	// event of the body.
	trace string
}

// MaxGroup is the most events of an NDJSON body handed to Ingest.SinkAll
// at once.
const MaxGroup = 256

// take decodes and sinks the event b on line (or adds it to the group).
// It returns an error only when sink failed for a reason other than the
// event itself, with the line of the event it failed on.
func (in *ingester) take(line int, b []byte) (int, error) {
	e, err := in.dec.Decode(b)
	if err == nil {
		e.Trace = in.trace
	} else if rej := (*Rejection)(nil); in.single && errors.As(err, &rej) && strings.Contains(rej.Detail, "unexpected data after the value") {
		hinted := *rej
		hinted.Detail += " (several events? send them as application/x-ndjson, one a line)"
		err = &hinted
	}
	if err == nil && in.sinkAll != nil {
		in.group, in.lines = append(in.group, e), append(in.lines, line)
		if len(in.group) < MaxGroup {
			return 0, nil
		}
		return in.flush()
	}
	if err != nil {
		// A refusal ends the group before it: what a 503 leaves
		// unprocessed is after every refusal listed.
		if stopped, err := in.flush(); err != nil {
			return stopped, err
		}
	} else if err = in.sink(e); err != nil && ReasonOf(err) == "" {
		return line, err
	}
	if err != nil {
		in.reject(line, err)
		return 0, nil
	}
	in.accept(1)
	return 0, nil
}

// flush hands the group to sinkAll. It returns the line of the event
// sinkAll failed on, and why.
func (in *ingester) flush() (int, error) {
	if len(in.group) == 0 {
		return 0, nil
	}
	n, err := in.sinkAll(in.group)
	in.accept(n)
	stopped := 0
	if err != nil {
		stopped = in.lines[n]
	}
	clear(in.group)
	in.group, in.lines = in.group[:0], in.lines[:0]
	return stopped, err
}

func (in *ingester) accept(n int) {
	in.accepted += n
	if in.counters != nil {
		for range n {
			in.counters.Accept()
		}
	}
}

func (in *ingester) reject(line int, err error) {
	in.rejected++
	if in.counters != nil {
		in.counters.Reject(ReasonOf(err))
	}
	if in.onReject != nil {
		in.onReject(line, err)
	}
}

// readLines takes every line of r. When it stops early it returns the line it
// stopped at, which was not taken.
func (in *ingester) readLines(ctx context.Context, r io.Reader) (stopped int, err error) {
	max := in.dec.maxSize()
	br := bufio.NewReaderSize(r, 64<<10)
	var buf []byte
	for line := 1; ; line++ {
		if err := ctx.Err(); err != nil {
			if len(in.lines) > 0 { // gathered, not taken
				line = in.lines[0]
			}
			return line, fmt.Errorf("bus: line %d: %w", line, err)
		}
		b, n, err := nextLine(br, buf[:0], max)
		buf = b
		if n > max {
			if stopped, err := in.flush(); err != nil {
				return stopped, fmt.Errorf("bus: line %d: %w", stopped, err)
			}
			in.reject(line, &Rejection{ReasonTooLarge, fmt.Sprintf("line of %d bytes, over the limit of %d", n, max)})
		} else if !blank(b) {
			if stopped, err := in.take(line, b); err != nil {
				return stopped, fmt.Errorf("bus: line %d: %w", stopped, err)
			}
		}
		if err == io.EOF {
			if stopped, err := in.flush(); err != nil {
				return stopped, fmt.Errorf("bus: line %d: %w", stopped, err)
			}
			return 0, nil
		}
		if err != nil {
			if stopped, err := in.flush(); err != nil {
				return stopped, fmt.Errorf("bus: line %d: %w", stopped, err)
			}
			return line, fmt.Errorf("bus: read line %d: %w", line, err)
		}
	}
}

// nextLine appends the next line of br, without its line ending, to buf and
// returns it with its length n. A line longer than max is counted but not
// kept: then n > max and the bytes returned are not the line. err is io.EOF
// after the last line (which may or may not end with a newline).
func nextLine(br *bufio.Reader, buf []byte, max int) (b []byte, n int, err error) {
	var last byte // the byte before the newline, across fragments
	for {
		frag, err := br.ReadSlice('\n')
		if len(buf)+len(frag) <= max+2 { // room for "\r\n"
			buf = append(buf, frag...)
		}
		n += len(frag)
		if len(frag) > 0 && frag[len(frag)-1] == '\n' {
			if len(frag) > 1 {
				last = frag[len(frag)-2]
			}
			n--
			if last == '\r' {
				n--
			}
			if len(buf) > n {
				buf = buf[:n]
			}
			return buf, n, nil
		}
		if len(frag) > 0 {
			last = frag[len(frag)-1]
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if len(buf) > n {
			buf = buf[:n]
		}
		return buf, n, err
	}
}

func blank(b []byte) bool {
	for _, c := range b {
		if c != ' ' && c != '\t' && c != '\r' && c != '\n' {
			return false
		}
	}
	return true
}

// defaultDecoder serves callers that give no Decoder. A Decoder is safe for
// concurrent use, and sharing one shares its pool of view builders.
var defaultDecoder Decoder

// Limit is the largest event JSON d takes, in bytes (MaxSize or its
// default): a source that can tell its peer (MQTT's Maximum Packet Size)
// or check before it decodes reads it here.
func (d *Decoder) Limit() int { return d.maxSize() }

func (d *Decoder) maxSize() int {
	if d.MaxSize <= 0 {
		return DefaultMaxEventSize
	}
	return d.MaxSize
}
