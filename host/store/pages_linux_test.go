package store_test

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/ruled-dev/ruled/host/store"
)

// TestBoltDropPages: the pages a scan of every record brought in leave
// the process's resident set, and a read after that reads the same bytes.
func TestBoltDropPages(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ruled.db")
	b := openBolt(t, path, store.BoltOptions{})
	value := strings.Repeat("x", 300)
	for i := range 4000 {
		if err := b.HSet(pending, fmt.Sprintf("run-%05d", i), value); err != nil {
			t.Fatal(err)
		}
	}
	scan := func() int {
		n := 0
		if err := b.HScan(pending, func(field, v []byte) error {
			if string(v) == value {
				n++
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := scan(); n != 4000 {
		t.Fatalf("scanned %d records; want 4000", n)
	}
	before := mappedRSS(t, path)
	if before < 1024 {
		t.Fatalf("the scan left %d kB of the file resident; want it all (~1.3 MB)", before)
	}
	if err := b.DropPages(); err != nil {
		t.Fatal(err)
	}
	if after := mappedRSS(t, path); after > before/10 {
		t.Errorf("%d kB of the file resident after DropPages; was %d", after, before)
	}
	if n := scan(); n != 4000 {
		t.Errorf("scanned %d records after DropPages; want 4000", n)
	}
	if v, ok, err := b.HGet(pending, "run-01234"); err != nil || !ok || string(v) != value {
		t.Errorf("HGet after DropPages = %.20q, %v, %v", v, ok, err)
	}
}

// mappedRSS is the resident kB of this process's maps of path
// (/proc/self/smaps).
func mappedRSS(t *testing.T, path string) int {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Skip("no /proc/self/smaps:", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	in, kb := false, 0
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		switch {
		case len(fields) >= 5 && strings.Contains(fields[0], "-") && len(fields[1]) == 4: // a map's first line
			in = len(fields) >= 6 && fields[5] == path
		case in && len(fields) == 3 && fields[0] == "Rss:":
			n, _ := strconv.Atoi(fields[1])
			kb += n
		}
	}
	return kb
}
