package cronspec

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/robfig/cron/v3"
)

func mustParse(t testing.TB, s string) *Spec {
	t.Helper()
	sp, err := Parse(s)
	if err != nil {
		t.Fatalf("Parse(%q): %v", s, err)
	}
	return sp
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		spec, err string
		offset    int
	}{
		{"", "an empty schedule", 0},
		{"0 3 * *", "4 fields, want 5", 0},
		{"0 0 3 * * *", "six fields: ruled schedules to the minute, without a seconds field", 0},
		{"60 3 * * *", "minute: 60 is outside 0-59", 0},
		{"0 24 * * *", "hour: 24 is outside 0-23", 2},
		{"0 3 0 * *", "day-of-month: 0 is outside 1-31", 4},
		{"0 3 * 13 *", "month: 13 is outside 1-12", 6},
		{"0 3 * * 8", "day-of-week: 8 is outside 0-7", 8},
		{"0 3 * * FUN", `day-of-week: "FUN" is not a number`, 8},
		{"0 3 * * MON-", `day-of-week: "" is not a number`, 12},
		{"-1 * * * *", `minute: "-1": a value is never negative, and a range needs its start (1-5)`, 0},
		{"1-2-3 * * * *", `minute: "1-2-3": a range has one - (1-5)`, 0},
		{"0 5-3 * * *", "hour: range 5-3 starts above its end", 2},
		{"*/0 * * * *", `minute: step "0" is not a whole number above 0`, 2},
		{"1,,2 * * * *", "minute: an empty item", 2},
		{"? * * * *", "minute: ? is for day-of-month and day-of-week", 0},
		{"0 0 31 2 *", `day-of-month: "0 0 31 2 *" never comes due: no month has that day`, 4},
		{"@every 5m", "@every is not a cron expression", 0},
		{"@fortnightly", `"@fortnightly" is not a shorthand`, 0},
		{"CRON_TZ=Europe/Berlin 0 3 * * *", "a time zone prefix is not part of the expression", 0},
	}
	for _, tc := range tests {
		_, err := Parse(tc.spec)
		e, ok := err.(*Error)
		if !ok || e.Error() != tc.err || e.Offset != tc.offset || e.Hint == "" {
			t.Errorf("Parse(%q) = %v (%+v); want %q at %d with a hint", tc.spec, err, e, tc.err, tc.offset)
		}
	}
}

func TestNext(t *testing.T) {
	from := time.Date(2026, 12, 2, 3, 16, 30, 0, time.UTC) // a Wednesday
	tests := []struct{ spec, want string }{
		{"* * * * *", "2026-12-02T03:17:00Z"},
		{"0 3 * * *", "2026-12-03T03:00:00Z"},
		{"*/15 * * * *", "2026-12-02T03:30:00Z"},
		{"0 9 * * MON-FRI", "2026-12-02T09:00:00Z"},
		{"0 9 * * sat,sun", "2026-12-05T09:00:00Z"},
		{"0 0 1 1 *", "2027-01-01T00:00:00Z"},
		{"@hourly", "2026-12-02T04:00:00Z"},
		{"@weekly", "2026-12-06T00:00:00Z"},
		{"0 0 29 2 *", "2028-02-29T00:00:00Z"},
		{"0 0 13 * 5", "2026-12-04T00:00:00Z"},   // the 13th or a Friday: both restricted, either matches
		{"0 0 */10 * 5", "2026-12-04T00:00:00Z"}, // */10 restricts: the 1st, 11th, 21st, 31st or a Friday
		{"0 0 * * 7", "2026-12-06T00:00:00Z"},    // 7 is Sunday
		{"5/20 3 * * *", "2026-12-02T03:25:00Z"},
	}
	for _, tc := range tests {
		if got := mustParse(t, tc.spec).Next(from, time.UTC).Format(time.RFC3339); got != tc.want {
			t.Errorf("Next(%q) = %s; want %s", tc.spec, got, tc.want)
		}
	}
	if got := mustParse(t, "0 0 */10 * 5").Next(time.Date(2026, 12, 4, 1, 0, 0, 0, time.UTC), time.UTC); got.Day() != 11 {
		t.Errorf("0 0 */10 * 5 came due on %v; want the 11th, a Friday not being first", got)
	}
}

// occurrences lists the instants spec comes due in (from, to].
func occurrences(t *testing.T, spec string, loc *time.Location, from, to time.Time) []string {
	sp := mustParse(t, spec)
	var out []string
	for at := sp.Next(from, loc); !at.After(to); at = sp.Next(at, loc) {
		out = append(out, at.In(loc).Format("01-02 15:04 MST"))
	}
	return out
}

// TestNextAcrossDST: each matching civil minute once — the spring gap's
// minutes come due once at its end, the autumn fold's at their first
// instant only.
func TestNextAcrossDST(t *testing.T) {
	berlin, _ := time.LoadLocation("Europe/Berlin")
	spring := time.Date(2026, 3, 29, 0, 0, 0, 0, berlin)  // 02:00 CET → 03:00 CEST
	autumn := time.Date(2026, 10, 25, 0, 0, 0, 0, berlin) // 03:00 CEST → 02:00 CET
	tests := []struct {
		name, spec string
		from       time.Time
		want       string
	}{
		{"daily in the gap runs once, at its end", "30 2 * * *", spring, "03-29 03:00 CEST"},
		{"daily after the gap", "30 3 * * *", spring, "03-29 03:30 CEST"},
		{"every 20 minutes across the gap", "*/20 * * * *", spring.Add(90 * time.Minute),
			"03-29 01:40 CET,03-29 03:00 CEST,03-29 03:20 CEST,03-29 03:40 CEST"},
		{"daily in the fold runs once, the first time", "30 2 * * *", autumn, "10-25 02:30 CEST"},
		{"every 20 minutes: the repeated hour runs nothing twice", "*/20 * * * *", autumn.Add(2 * time.Hour),
			"10-25 02:20 CEST,10-25 02:40 CEST,10-25 03:00 CET,10-25 03:20 CET"},
		{"hourly across the fold", "0 * * * *", autumn.Add(time.Hour),
			"10-25 02:00 CEST,10-25 03:00 CET,10-25 04:00 CET"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			end := tc.from.Add(4 * time.Hour)
			if strings.HasPrefix(tc.spec, "30 ") {
				end = tc.from.Add(24 * time.Hour)
			}
			got := occurrences(t, tc.spec, berlin, tc.from, end)
			got = got[:min(len(got), len(strings.Split(tc.want, ",")))]
			if strings.Join(got, ",") != tc.want {
				t.Errorf("occurrences %q; want %q", got, tc.want)
			}
		})
	}
	// A day of each: 24 hours of "0 * * * *" across both changes is 23 and
	// 25 hours of real time, one occurrence per civil hour either way.
	if n := len(occurrences(t, "0 * * * *", berlin, spring, spring.AddDate(0, 0, 1))); n != 23 {
		t.Errorf("spring day: %d hourly occurrences; want 23 (the hour that does not exist comes due with 03:00)", n)
	}
	if n := len(occurrences(t, "0 * * * *", berlin, autumn, autumn.AddDate(0, 0, 1))); n != 24 {
		t.Errorf("autumn day: %d hourly occurrences; want 24 (one a civil hour)", n)
	}
}

func TestNextEvery(t *testing.T) {
	tests := []struct {
		after time.Time
		d     time.Duration
		want  time.Time
	}{
		{time.Date(2026, 12, 2, 3, 16, 30, 0, time.UTC), 15 * time.Minute, time.Date(2026, 12, 2, 3, 30, 0, 0, time.UTC)},
		{time.Date(2026, 12, 2, 3, 30, 0, 0, time.UTC), 15 * time.Minute, time.Date(2026, 12, 2, 3, 45, 0, 0, time.UTC)},
		{time.Unix(-1, 0), time.Second, time.Unix(0, 0)},
		{time.Unix(-2, 500), time.Second, time.Unix(-1, 0)},
	}
	for _, tc := range tests {
		if got := NextEvery(tc.after, tc.d); !got.Equal(tc.want) {
			t.Errorf("NextEvery(%v, %v) = %v; want %v", tc.after, tc.d, got, tc.want)
		}
	}
}

// randomSpec makes a cron expression of the standard grammar.
func randomSpec(r *rand.Rand) string {
	item := func(min, max int, names []string) string {
		v := func() string {
			n := min + r.IntN(max-min+1)
			if names != nil && r.IntN(3) == 0 && n-min < len(names) {
				return names[n-min]
			}
			return fmt.Sprint(n)
		}
		switch r.IntN(6) {
		case 0:
			return "*"
		case 1:
			return "*/" + fmt.Sprint(1+r.IntN(max))
		case 2:
			a := min + r.IntN(max-min+1)
			b := a + r.IntN(max-a+1)
			return fmt.Sprintf("%d-%d", a, b)
		case 3:
			a := min + r.IntN(max-min+1)
			return fmt.Sprintf("%d/%d", a, 1+r.IntN(max))
		}
		return v()
	}
	list := func(min, max int, names []string) string {
		n := 1 + r.IntN(3)
		parts := make([]string, n)
		for i := range parts {
			parts[i] = item(min, max, names)
		}
		return strings.Join(parts, ",")
	}
	return strings.Join([]string{list(0, 59, nil), list(0, 23, nil), list(1, 31, nil), list(1, 12, months), list(0, 6, days)}, " ")
}

// TestAgreesWithRobfig: robfig/cron/v3's standard parser accepts what
// Parse accepts, and in UTC both come due at the same minutes.
func TestAgreesWithRobfig(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	n := 2000
	if testing.Short() {
		n = 200
	}
	for i := 0; i < n; i++ {
		spec := randomSpec(r)
		ours, err := Parse(spec)
		theirs, terr := cron.ParseStandard(spec)
		if err != nil {
			if terr == nil && !strings.Contains(err.Error(), "never comes due") {
				t.Errorf("%q: refused (%v); robfig accepts it", spec, err)
			}
			continue
		}
		if terr != nil {
			t.Errorf("%q: accepted; robfig refuses it: %v", spec, terr)
			continue
		}
		at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(r.IntN(365*24*60)) * time.Minute)
		a, b := at, at
		for k := 0; k < 5; k++ {
			a, b = ours.Next(a, time.UTC), theirs.Next(b)
			if !a.Equal(b) {
				t.Errorf("%q after %v: next %v; robfig %v", spec, at, a, b)
				break
			}
		}
	}
}

// FuzzParse: Parse never panics, and what it accepts comes due strictly
// later each time, on a minute.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"0 3 * * *", "*/15 * * * *", "0 9 * * MON-FRI", "@daily", "5/20 1-3,7 1,15 JAN-MAR *", "0 0 31 2 *"} {
		f.Add(s)
	}
	berlin, _ := time.LoadLocation("Europe/Berlin")
	f.Fuzz(func(t *testing.T, s string) {
		sp, err := Parse(s)
		if err != nil {
			if e, ok := err.(*Error); !ok || e.Offset < 0 || e.Offset > len(s) {
				t.Fatalf("Parse(%q): %v with offset outside the text", s, err)
			}
			return
		}
		at := time.Date(2026, 10, 24, 22, 0, 0, 0, time.UTC)
		for k := 0; k < 3; k++ {
			next := sp.Next(at, berlin)
			if next.IsZero() {
				return
			}
			if !next.After(at) || next.Second() != 0 && next.Unix()%60 != 0 {
				t.Fatalf("%q: next after %v is %v", s, at, next)
			}
			at = next
		}
	})
}

func ExampleSpec_Next() {
	berlin, _ := time.LoadLocation("Europe/Berlin")
	sp, _ := Parse("30 2 * * *")
	// The night of the spring change: 02:30 does not exist in Berlin.
	at := sp.Next(time.Date(2026, 3, 28, 12, 0, 0, 0, berlin), berlin)
	fmt.Println(at.Format("2006-01-02 15:04 MST"))
	// Output: 2026-03-29 03:00 CEST
}
