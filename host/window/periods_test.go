package window

import (
	"testing"
	"time"
)

// TestPeriodHardZones: hourly over 2020-2026, the zones whose midnight
// is skipped (Santiago, Havana, Beirut, Asuncion, Cairo …) or comes
// twice (Gaza, 2020-10-24: back from 01:00 to 00:00), and 1970's and
// 1974's changes that did not end on a whole hour.
func TestPeriodHardZones(t *testing.T) {
	for _, zn := range []string{"America/Havana", "America/Santiago", "Asia/Beirut", "America/Asuncion", "Africa/Cairo", "America/Scoresbysund", "Atlantic/Azores", "Asia/Gaza", "America/Goose_Bay"} {
		z, err := time.LoadLocation(zn)
		if err != nil {
			t.Log(err)
			continue
		}
		s := Spec{Kind: Tumbling, Calendar: Day, Zone: z}
		for ts := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC); ts.Year() < 2027; ts = ts.Add(time.Hour) {
			checkPeriod(t, zn, s, ts)
		}
	}
	for _, c := range []struct {
		zone string
		at   time.Time
	}{
		{"America/Santo_Domingo", time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC)},
		{"America/Montevideo", time.Date(1974, 1, 1, 0, 0, 0, 0, time.UTC)},
		{"Antarctica/Casey", time.Date(2023, 3, 1, 0, 0, 0, 0, time.UTC)},
		{"Antarctica/Vostok", time.Date(2023, 12, 10, 0, 0, 0, 0, time.UTC)},
	} {
		z, err := time.LoadLocation(c.zone)
		if err != nil {
			continue
		}
		s := Spec{Kind: Tumbling, Calendar: Day, Zone: z}
		for ts := c.at; ts.Before(c.at.AddDate(1, 0, 0)); ts = ts.Add(20 * time.Minute) {
			checkPeriod(t, c.zone, s, ts)
		}
	}
}

// TestRepeatedMidnightCounts: where midnight comes twice (a fall-back
// from 01:00 to 00:00), the day starts at the first: an event of the
// first hour is counted, not late.
func TestRepeatedMidnightCounts(t *testing.T) {
	gaza, err := time.LoadLocation("Asia/Gaza")
	if err != nil {
		t.Skip(err)
	}
	at := time.Date(2020, 10, 23, 21, 30, 0, 0, time.UTC) // 2020-10-24 00:30 +0300, the first midnight hour
	clk := newVirtualAt(at)
	tb := newTable(t, nil, clk, map[string]Spec{"d": {Kind: Tumbling, Calendar: Day, Zone: gaza}}, nil)
	if o := tb.Observe("d", "", 0, clk.Now()); o != Counted {
		t.Fatalf("an event at %v, now: %v", at.In(gaza), o)
	}
}
