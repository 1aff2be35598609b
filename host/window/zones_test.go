package window

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func zones(t *testing.T) []string {
	root := "/usr/share/zoneinfo"
	var out []string
	filepath.Walk(root, func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return nil
		}
		n := strings.TrimPrefix(p, root+"/")
		if strings.HasPrefix(n, "posix") || strings.HasPrefix(n, "right") || strings.Contains(n, ".") || n[0] < 'A' || n[0] > 'Z' {
			return nil
		}
		out = append(out, n)
		return nil
	})
	return out
}

// TestPeriodEveryZone: in every zone the system has, a day's and a
// week's period holds the time asked (start <= t < end) and starts at
// the first instant of its local day, sampled every 7 hours of
// 2025-2026.
func TestPeriodEveryZone(t *testing.T) {
	zs := zones(t)
	if len(zs) == 0 {
		t.Skip("no zoneinfo")
	}
	for _, zn := range zs {
		z, err := time.LoadLocation(zn)
		if err != nil {
			continue
		}
		for _, cal := range []Calendar{Day, Week} {
			s := Spec{Kind: Tumbling, Calendar: cal, Zone: z}
			for ts := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC); ts.Year() < 2027; ts = ts.Add(7 * time.Hour) {
				checkPeriod(t, zn, s, ts)
			}
		}
	}
}

// checkPeriod fails t unless s's period of ts holds it and starts on
// the first instant of its local day.
func checkPeriod(t *testing.T, zn string, s Spec, ts time.Time) {
	t.Helper()
	st, en := s.Period(ts)
	_, _, d0 := st.Add(-time.Second).In(s.Zone).Date()
	_, _, d1 := st.In(s.Zone).Date()
	if ts.Before(st) || !ts.Before(en) || d0 == d1 {
		t.Fatalf("%s %v: t=%v start=%v end=%v", zn, s.Calendar, ts.In(s.Zone), st.In(s.Zone), en.In(s.Zone))
	}
}
