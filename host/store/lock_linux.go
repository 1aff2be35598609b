package store

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// lockHolder names the process holding the flock bbolt takes on path, found
// in /proc/locks by the file's device and inode. A flock has no owner to ask
// for (F_GETLK sees only POSIX locks), and /proc/locks is read-only, so
// this costs the failing open nothing.
func lockHolder(path string) string {
	var st syscall.Stat_t
	if syscall.Stat(path, &st) != nil {
		return pidOf(0)
	}
	dev := uint64(st.Dev)
	major := (dev>>8)&0xfff | (dev>>32)&^uint64(0xfff)
	minor := dev&0xff | (dev>>12)&^uint64(0xff)
	f, err := os.Open("/proc/locks")
	if err != nil {
		return pidOf(0)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// 1: FLOCK  ADVISORY  WRITE 4242 fd:01:1234567 0 EOF
		// Waiters have "->" after the number; bbolt never waits in the
		// kernel (LOCK_NB), and a waiter does not hold the lock anyway.
		fs := strings.Fields(sc.Text())
		if len(fs) < 6 || fs[1] != "FLOCK" {
			continue
		}
		id := strings.Split(fs[5], ":")
		if len(id) != 3 {
			continue
		}
		ma, err1 := strconv.ParseUint(id[0], 16, 64)
		mi, err2 := strconv.ParseUint(id[1], 16, 64)
		ino, err3 := strconv.ParseUint(id[2], 10, 64)
		if err1 != nil || err2 != nil || err3 != nil || ma != major || mi != minor || ino != uint64(st.Ino) {
			continue
		}
		if pid, err := strconv.Atoi(fs[4]); err == nil {
			return pidOf(pid)
		}
	}
	return pidOf(0)
}
