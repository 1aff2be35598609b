package bus

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

type rejected struct {
	line   int
	reason Reason
}

func TestReadNDJSON(t *testing.T) {
	big := `{"topic":"a","pad":"` + strings.Repeat("x", 200) + `"}`
	tests := []struct {
		name     string
		max      int
		in       string
		topics   string // of the accepted events, in order
		rejected []rejected
	}{
		{"empty", 0, "", "[]", nil},
		{"one without newline", 0, `{"topic":"a"}`, "[a]", nil},
		{"several", 0, "{\"topic\":\"a\"}\n{\"topic\":\"b\"}\n{\"topic\":\"c\"}\n", "[a b c]", nil},
		{"crlf", 0, "{\"topic\":\"a\"}\r\n{\"topic\":\"b\"}\r\n", "[a b]", nil},
		{"blank lines", 0, "\n  \n{\"topic\":\"a\"}\n\t\n\n{\"topic\":\"b\"}\n\n", "[a b]", nil},
		{"bad lines go on", 0, "{\"topic\":\"a\"}\nnot json\n[1]\n{\"topic\":\"ruled.cmd.x\"}\n{}\n{\"topic\":\"b\"}\n",
			"[a b]", []rejected{{2, ReasonNotJSON}, {3, ReasonNotObj}, {4, ReasonReserved}, {5, ReasonNoTopic}}},
		{"numbering counts blanks", 0, "\n\nnope\n", "[]", []rejected{{3, ReasonNotJSON}}},
		{"too long resyncs", 100, "{\"topic\":\"a\"}\n" + big + "\n{\"topic\":\"b\"}\n", "[a b]", []rejected{{2, ReasonTooLarge}}},
		{"too long last line", 100, "{\"topic\":\"a\"}\n" + big, "[a]", []rejected{{2, ReasonTooLarge}}},
		{"too long over the read buffer", 100, strings.Repeat("x", 200<<10) + "\n{\"topic\":\"b\"}", "[b]", []rejected{{1, ReasonTooLarge}}},
		{"max counts the line, not its ending", 13, "{\"topic\":\"a\"}\r\n{\"topic\":\"bb\"}\n", "[a]", []rejected{{2, ReasonTooLarge}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var topics []string
			var rej []rejected
			acc, nrej, err := ReadNDJSON(context.Background(), strings.NewReader(tc.in), &Decoder{MaxSize: tc.max},
				func(e *Event) error { topics = append(topics, e.Topic); return nil },
				func(line int, err error) { rej = append(rej, rejected{line, ReasonOf(err)}) })
			if err != nil {
				t.Fatal(err)
			}
			if got := fmt.Sprint(topics); got != tc.topics {
				t.Errorf("accepted %s; want %s", got, tc.topics)
			}
			if acc != len(topics) || nrej != len(rej) {
				t.Errorf("counts = %d, %d; want %d, %d", acc, nrej, len(topics), len(rej))
			}
			if fmt.Sprint(rej) != fmt.Sprint(tc.rejected) {
				t.Errorf("rejected %v; want %v", rej, tc.rejected)
			}
		})
	}
}

func TestReadNDJSONOneByteReads(t *testing.T) {
	in := "{\"topic\":\"a\"}\r\n" + strings.Repeat("y", 300) + "\r\n{\"topic\":\"b\"}\n"
	var topics []string
	acc, rej, err := ReadNDJSON(context.Background(), iotest.OneByteReader(strings.NewReader(in)), &Decoder{MaxSize: 64},
		func(e *Event) error { topics = append(topics, e.Topic); return nil }, nil)
	if err != nil || acc != 2 || rej != 1 || fmt.Sprint(topics) != "[a b]" {
		t.Errorf("got %d, %d, %v, %v; want 2, 1, nil, [a b]", acc, rej, err, topics)
	}
}

func TestReadNDJSONSink(t *testing.T) {
	in := "{\"topic\":\"a\"}\n{\"topic\":\"refuse\"}\n{\"topic\":\"b\"}\n{\"topic\":\"stop\"}\n{\"topic\":\"c\"}\n"
	full := errors.New("queue full")
	var rej []rejected
	acc, nrej, err := ReadNDJSON(context.Background(), strings.NewReader(in), nil,
		func(e *Event) error {
			switch e.Topic {
			case "refuse":
				return &Rejection{Reason: "no rule", Detail: "nothing listens"}
			case "stop":
				return full
			}
			return nil
		},
		func(line int, err error) { rej = append(rej, rejected{line, ReasonOf(err)}) })
	if !errors.Is(err, full) || !strings.Contains(err.Error(), "line 4") {
		t.Errorf("err = %v; want queue full at line 4", err)
	}
	if acc != 2 || nrej != 1 || fmt.Sprint(rej) != "[{2 no rule}]" {
		t.Errorf("got %d accepted, %d rejected %v; want 2, 1 [{2 no rule}]", acc, nrej, rej)
	}
}

func TestReadNDJSONErrors(t *testing.T) {
	sink := func(*Event) error { return nil }
	t.Run("read error", func(t *testing.T) {
		broken := errors.New("disk gone")
		r := io.MultiReader(strings.NewReader("{\"topic\":\"a\"}\n"), iotest.ErrReader(broken))
		acc, _, err := ReadNDJSON(context.Background(), r, nil, sink, nil)
		if !errors.Is(err, broken) || acc != 1 {
			t.Errorf("got %d, %v; want 1, disk gone", acc, err)
		}
	})
	t.Run("context", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		n := 0
		acc, _, err := ReadNDJSON(ctx, strings.NewReader(strings.Repeat("{\"topic\":\"a\"}\n", 10)), nil,
			func(*Event) error {
				if n++; n == 3 {
					cancel()
				}
				return nil
			}, nil)
		if !errors.Is(err, context.Canceled) || acc != 3 {
			t.Errorf("got %d, %v; want 3, context canceled", acc, err)
		}
	})
}

// The line ending may straddle the reader's 64 KiB buffer.
func TestReadNDJSONLineEndAtBufferEdge(t *testing.T) {
	eventOf := func(n int) string {
		head := `{"topic":"a","pad":"`
		return head + strings.Repeat("x", n-len(head)-2) + `"}`
	}
	for _, n := range []int{64<<10 - 1, 64 << 10, 64<<10 + 1} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			in := eventOf(n) + "\r\n" + eventOf(n) + "\n"
			acc, rej, err := ReadNDJSON(context.Background(), strings.NewReader(in), &Decoder{MaxSize: n},
				func(*Event) error { return nil }, nil)
			if err != nil || acc != 2 || rej != 0 {
				t.Errorf("got %d, %d, %v; want 2, 0, nil", acc, rej, err)
			}
			acc, rej, _ = ReadNDJSON(context.Background(), strings.NewReader(in), &Decoder{MaxSize: n - 1},
				func(*Event) error { return nil }, nil)
			if acc != 0 || rej != 2 {
				t.Errorf("with a limit one lower: got %d, %d; want 0, 2", acc, rej)
			}
		})
	}
}
