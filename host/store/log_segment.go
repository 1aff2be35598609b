package store

import (
	"bufio"
	"cmp"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ruled-dev/ruled/host/runlog"
	"github.com/ruled-dev/ruled/internal/fastjson"
)

// SegmentLog is the execution log on a device (runlog.Store): append-only
// segment files in a directory of their own, and the index in memory. A
// batch is appended to the newest segment in one write, synced within
// SyncEvery by the log's syncer; no B+tree is rewritten, which is what a bbolt commit of
// the log spent most of its CPU on (copying pages), on the same two cores
// as the runs. The writer appends its batches directly (Append); Stage and
// Commit, the keyed path, keep staged entries in memory, as BoltLog does.
//
// A segment (seg-<n>.log) is segMagic, then a sequence of records:
//
//	uvarint(len(body)) body crc32c(body, seeded with segSeed(n)) (4 bytes, little endian)
//	body: 'E' uvarint(len(run)) run uvarint(seq) value   an entry (seq 0: the run's exec)
//	      'D' uvarint(len(run)) run                      a run deleted
//
// (A segment written before segMagic existed has no magic and unseeded
// CRCs; it is read, and appended to while it is the newest, as it was.)
//
// Opening scans every segment in order and rebuilds the index: later
// records win, a 'D' removes what came before it. A torn record at the end
// of the newest segment (a crash mid-append) is cut off, and so is
// whatever a reused file held after the records written in it: the first
// record that does not read as this segment's ends it. Space comes back
// from the oldest segment only: once it is mostly dead (retention deleted
// its runs, or their nodes were written again, open then closed), its live
// entries are appended anew and the file is removed, or kept as the
// spare (spare-<n>.log) that the next segment is written in. Removing only
// the oldest keeps every 'D' record until the entries it deletes are
// gone, so a deleted run never comes back at the next open.
//
// It runs one goroutine, the syncer (syncLoop), from the open until Close,
// which stops it; a log opened read-only runs none.
type SegmentLog struct {
	dir string
	max int64 // a segment is sealed past this size

	memStaging

	mu   sync.Mutex // the index and the files; memStaging has its own
	runs map[string]*segRun
	// idx is retention's view of runs, over their own Metas (Retain); nil
	// while the segments are read at open, built once they are.
	idx *runlog.Index
	// last is the run put last: a batch's records of a run are mostly
	// together, and a lookup in runs (thousands of runs, a cache miss or
	// two each) was the larger part of put.
	last *segRun
	// names are the rule ids and outcomes read at open (name); nil after.
	names map[string]string
	// opened are the runs read at open in the order the segments first
	// name them, which is nearly the index's: it sorts them in a few
	// passes, where the map's order took a full sort (0.16 s of 100,000
	// runs' start, issue 38). Nil after.
	opened []*segRun
	segs   []*segment // oldest first; the last is appended to
	size   int64      // every segment's bytes
	live   int64      // the bytes of the entries the index points at
	buf    []byte
	valAt  []int // where each value of buf starts, reused
	// liveBefore is each segment's live bytes before a Delete, reused.
	liveBefore []int64
	ids        []string  // the runs a Retain deletes, reused
	dels       []*segRun // the runs a deletion finds, reused
	// copied is how many entries compaction appended anew (tests).
	copied int
	ro     bool
	// dirDirty: a segment was created since the last sync.
	dirDirty bool
	// spare is a reclaimed segment's file, kept (as spare-<n>.log, n its
	// number as a segment: spareNum) for the next segment instead of
	// removed: written over, a file whose pages
	// and blocks are there already cost the writer's pwrite a fifth of
	// what a new file's did, whose pages the kernel allocates and zeroes
	// and whose blocks ext4 reserves as it goes (and the old file's,
	// freed at its unlink). What it held is never read as the new
	// segment's: records carry their segment's number in their CRC
	// (segSeed). nil: none.
	spare    *os.File
	spareNum int
	// The syncer (syncLoop): stopped by Close.
	stopSync chan struct{}
	syncDone chan struct{}
	stopOnce sync.Once
}

// SyncEvery is how often the log's files are synced, by a goroutine of
// the log's own (syncLoop), never by an append. A process that dies loses
// nothing written (the kernel has it); syncing is for a power cut, and a
// log synced at every batch — tens a second on a busy device — spent the
// writer's time and the flash's life on a best-effort record: a power cut
// loses at most this much of the log. Off the writer's path because a sync
// of a few MiB takes tens of milliseconds, and a writer waiting on it is a
// writer whose queue fills: at full rate the log dropped entries in most
// rounds with its default queue (BenchmarkExecLog). Compaction and Commit
// sync at once: they move entries, or convert another store's.
//
// A sync takes every segment written since the last, sealed ones
// included, and the directory if a segment was created: a segment is not
// synced when it is sealed. On a busy log, retention empties the oldest
// segment and reclaim removes it within a second or so of its sealing
// (5,000 runs are a few segments), so most segments are removed before a
// sync would take them, and their pages are dropped, never written: a
// sync at each sealing (a dozen a second at full rate) wrote the flash
// with what was about to be deleted, and its fsync of the whole segment
// was the writer's largest system call (BenchmarkLogWriter).
const SyncEvery = time.Second

// How a write is made durable (write).
const (
	syncNone = iota // the next sync takes it along
	syncNow
)

// segRun is one run in the index.
type segRun struct {
	meta  runlog.Meta
	nodes []segNode // by seq (0: the exec entry): written in order, so appended
}

// liveRun is a run the writer opens: its usual nodes in its one
// allocation (a rule of a condition and three steps writes seven). A run
// read at open is a plain segRun with a slice as long as it needs: most
// of a restart's runs are parked after two or three nodes, and eight
// inline were 64 bytes more a run (issue 38: 100,000 parked runs).
type liveRun struct {
	segRun
	first [8]segNode
}

type segNode struct {
	seq uint32
	loc segLoc
}

// find is where seq is in r.nodes, or where it would go.
func (r *segRun) find(seq int) (int, bool) {
	n := len(r.nodes)
	if n == 0 || int(r.nodes[n-1].seq) < seq { // the usual case: a new node
		return n, false
	}
	return slices.BinarySearchFunc(r.nodes, seq, func(x segNode, seq int) int { return int(x.seq) - seq })
}

// segLoc is a value's place: its segment's number, its offset there and
// its length. Numbers, not a pointer to the segment: a run's nodes then
// hold no pointer for the collector to trace, and a node is 16 bytes, not
// 32 (a run's segRun, with its first eight nodes, is a 224-byte allocation,
// was 384: the log's largest allocation a run, BenchmarkExecLog's memory
// profile). A segment stays under 4 GiB (write).
type segLoc struct {
	seg, off, n uint32
}

// segOf is the segment numbered num: the newest mostly. Numbers run on
// with no gap but for files removed by hand, hence the search; nil if it
// is gone (the index never points at a removed segment).
func (l *SegmentLog) segOf(num uint32) *segment {
	if len(l.segs) == 0 {
		return nil
	}
	if s := l.segs[len(l.segs)-1]; uint32(s.num) == num {
		return s
	}
	i, ok := slices.BinarySearchFunc(l.segs, num, func(s *segment, num uint32) int { return cmp.Compare(uint32(s.num), num) })
	if !ok {
		return nil
	}
	return l.segs[i]
}

// account adds n bytes (negative: takes) to the live bytes of the segment
// numbered num and of the log.
func (l *SegmentLog) account(num uint32, n int64) {
	if s := l.segOf(num); s != nil {
		s.live += n
	}
	l.live += n
}

type segment struct {
	num  int
	f    *os.File
	size int64
	live int64
	// seed starts each record's CRC: segSeed(num) in a segment that
	// starts with segMagic, 0 in one written before segments had it.
	seed uint32
	// draining: the last Delete took entries out of this segment, so
	// retention is still working through it (see reclaim).
	draining bool
	dirty    bool // written since its last sync
}

// SegmentSize is how large a segment grows before the next is started.
const SegmentSize = 4 << 20

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// segMagic starts a segment whose records' CRCs are seeded with its
// number (segSeed), which is what lets a segment's file be used again
// (see SegmentLog.spare). Its first byte is a record length of 0, which
// no record has, so a segment without it (written before it existed)
// cannot be taken for one with it.
const segMagic = "\x00RLSEG2\n"

// sparePath is where the segment file reclaim keeps for the next
// segment waits: named by its number as a segment, so that only a later
// number can be given it (a spare whose records' seed is the new
// segment's own would be read as written anew).
func (l *SegmentLog) sparePath(num int) string {
	return filepath.Join(l.dir, fmt.Sprintf("spare-%06d.log", num))
}

// segSeed is the CRC seed of segment num's records: distinct for each
// number (the CRC of four bytes is a bijection), so a record left in a
// file from its use as another segment never reads as this one's — a
// CRC is linear, and two seeds that differ give CRCs that differ for
// every body.
func segSeed(num int) uint32 {
	return crc32.Checksum(binary.LittleEndian.AppendUint32(nil, uint32(num)), crcTable)
}

// OpenSegmentLog opens or creates the log in dir. readOnly opens it for
// reading alone (`ruled log` with no daemon running): nothing is cut,
// created or written.
func OpenSegmentLog(dir string, readOnly bool) (*SegmentLog, error) {
	l := &SegmentLog{dir: dir, max: SegmentSize, runs: map[string]*segRun{}, ro: readOnly}
	if !readOnly {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("store: log: %w", err)
		}
	}
	names, err := filepath.Glob(filepath.Join(dir, "seg-*.log"))
	if err != nil {
		return nil, fmt.Errorf("store: log: %w", err)
	}
	var nums []int
	for _, n := range names {
		if num, err := fileNum(n, "seg-"); err == nil {
			nums = append(nums, num)
		}
	}
	slices.Sort(nums)
	if !readOnly {
		l.openSpare()
	}
	for i, num := range nums {
		flag := os.O_RDWR
		if readOnly {
			flag = os.O_RDONLY
		}
		f, err := os.OpenFile(l.segPath(num), flag, 0o600)
		if err != nil {
			l.Close()
			return nil, fmt.Errorf("store: log: %w", err)
		}
		s := &segment{num: num, f: f}
		l.segs = append(l.segs, s)
		if err := l.scan(s, i == len(nums)-1); err != nil {
			l.Close()
			return nil, err
		}
	}
	l.names = nil // kept while reading: the runs' rule ids and outcomes
	ms := make([]*runlog.Meta, 0, len(l.runs))
	for _, r := range l.opened {
		if l.runs[r.meta.ID] == r { // not removed since
			ms = append(ms, &r.meta)
		}
	}
	l.opened = nil
	l.idx = runlog.NewIndex(ms)
	if len(l.segs) == 0 && !readOnly {
		if err := l.startSegment(1); err != nil {
			return nil, err
		}
	}
	if !readOnly {
		l.stopSync, l.syncDone = make(chan struct{}), make(chan struct{})
		go l.syncLoop()
	}
	return l, nil
}

// syncLoop syncs what was written every SyncEvery, until Close.
func (l *SegmentLog) syncLoop() {
	defer close(l.syncDone)
	t := time.NewTicker(SyncEvery)
	defer t.Stop()
	for {
		select {
		case <-l.stopSync:
			return
		case <-t.C:
			l.syncAside()
		}
	}
}

// syncAside syncs the segments written since the last sync, and the
// directory if a segment was created, holding the lock only to open them
// anew: an append goes on meanwhile (its writes are the next sync's), and
// reclaim may remove a segment being synced (the sync is then of a file
// no one needs). What fails to sync is synced again at the next tick.
func (l *SegmentLog) syncAside() {
	type pending struct {
		seg  *segment // nil: the directory
		path string
	}
	var todo []pending
	l.mu.Lock()
	for _, s := range l.segs {
		if s.dirty {
			todo = append(todo, pending{s, l.segPath(s.num)}) // not f.Name(): a spare's file is renamed
			s.dirty = false
		}
	}
	if l.dirDirty {
		todo = append(todo, pending{nil, l.dir})
		l.dirDirty = false
	}
	l.mu.Unlock()
	for _, p := range todo {
		err := syncPath(p.path)
		if err == nil {
			continue
		}
		l.mu.Lock()
		if p.seg == nil {
			l.dirDirty = true
		} else if slices.Contains(l.segs, p.seg) {
			p.seg.dirty = true
		}
		l.mu.Unlock()
	}
}

// syncPath syncs the file or directory at path through a descriptor of
// its own.
func syncPath(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	err = f.Sync()
	return errors.Join(err, f.Close())
}

func (l *SegmentLog) segPath(num int) string {
	return filepath.Join(l.dir, fmt.Sprintf("seg-%06d.log", num))
}

// scan applies a segment's records to the index. A record that does not
// read whole ends the segment: at the end of the newest one it is a torn
// append and is cut off (unless read-only).
func (l *SegmentLog) scan(s *segment, newest bool) error {
	fi, err := s.f.Stat()
	if err != nil {
		return fmt.Errorf("store: log %s: %w", s.f.Name(), err)
	}
	// Read through a small buffer, one record at a time, not the whole
	// segment at once: a segment is up to SegmentBytes, and all of it in
	// memory at the start was the largest of a restart's peaks (issue 38:
	// 100,000 parked runs' entries; io.ReadAll's growth was a fifth of
	// the start's CPU).
	size := fi.Size()
	br := bufio.NewReaderSize(io.NewSectionReader(s.f, 0, size), 64<<10)
	var off int64
	if head, err := br.Peek(len(segMagic)); err == nil && string(head) == segMagic {
		br.Discard(len(segMagic))
		s.seed, off = segSeed(s.num), int64(len(segMagic))
	}
	var body []byte
	for off < size {
		n, k, ok := readUvarint(br)
		end := off + int64(k) + int64(n) + 4
		if !ok || n > uint64(size) || end > size || uint64(end) > math.MaxUint32 {
			break
		}
		body = slices.Grow(body[:0], int(n)+4)[:n+4]
		if _, err := io.ReadFull(br, body); err != nil {
			break
		}
		if crc32.Update(s.seed, crcTable, body[:n]) != binary.LittleEndian.Uint32(body[n:]) {
			break
		}
		l.apply(s, body[:n], off+int64(k))
		off = end
	}
	s.size = off
	l.size += s.size
	if off < size && newest && !l.ro {
		if err := s.f.Truncate(off); err != nil {
			return fmt.Errorf("store: log %s: cutting a torn record: %w", s.f.Name(), err)
		}
	}
	return nil
}

// readUvarint is binary.ReadUvarint that also says how many bytes it
// read: a record's place in its segment counts them as written.
func readUvarint(br *bufio.Reader) (v uint64, k int, ok bool) {
	for shift := uint(0); k < binary.MaxVarintLen64; shift += 7 {
		b, err := br.ReadByte()
		if err != nil {
			return 0, k, false
		}
		k++
		if b < 0x80 {
			if k == binary.MaxVarintLen64 && b > 1 {
				return 0, k, false // overflows 64 bits
			}
			return v | uint64(b)<<shift, k, true
		}
		v |= uint64(b&0x7f) << shift
	}
	return 0, k, false
}

// apply is one record read at body's offset in s.
func (l *SegmentLog) apply(s *segment, body []byte, at int64) {
	if len(body) < 2 {
		return
	}
	n, k := binary.Uvarint(body[1:])
	if k <= 0 || uint64(len(body)-1-k) < n {
		return
	}
	// A run has several records: its id is a string once, not once a
	// record (the comparison and the lookup by string(b) do not allocate).
	id := body[1+k : 1+k+int(n)]
	var run string
	switch {
	case l.last != nil && l.last.meta.ID == string(id):
		run = l.last.meta.ID
	case l.runs[string(id)] != nil:
		run = l.runs[string(id)].meta.ID
	default:
		run = string(id)
	}
	rest := body[1+k+int(n):]
	switch body[0] {
	case 'D':
		if r := l.runs[run]; r != nil {
			l.forget(r)
		}
	case 'E':
		seq, k := binary.Uvarint(rest)
		if k <= 0 || seq > runlog.MaxSeq {
			return
		}
		v := rest[k:]
		r := l.put(run, int(seq), segLoc{seg: uint32(s.num), off: uint32(at) + uint32(len(body)-len(v)), n: uint32(len(v))}, nil)
		if seq == 0 {
			r.setMeta(v)
			r.meta.Rule, r.meta.Outcome = l.name(r.meta.Rule), l.name(r.meta.Outcome)
		}
	}
}

// name is s, or the equal string already read: thousands of runs share
// a few rule ids and outcomes, kept once each while the segments are read
// at open (issue 38: 100,000 parked runs' log entries).
func (l *SegmentLog) name(s string) string {
	if x, ok := l.names[s]; ok {
		return x
	}
	if l.names == nil {
		l.names = map[string]string{}
	}
	l.names[s] = s
	return s
}

// setMeta reads the index fields out of a run's exec entry: at open and
// for a commit by key, which have nothing else (Append is given them).
func (r *segRun) setMeta(v []byte) {
	if e, ok := execIndex(v); ok {
		r.meta.Rule, r.meta.Outcome, r.meta.At = e.Rule, e.Outcome, e.At
	}
}

// execFields is what the index keeps of a run's exec entry.
type execFields struct {
	Rule, Outcome string
	At            int64
}

// execIndex is the index fields of an exec entry, decoded: by hand for an
// entry as runlog writes it, else by json.Unmarshal. A start reads every
// run's entry, and json.Unmarshal was half of opening a log of 100,000
// runs (issue 38). FuzzExecIndex holds the two to the same answer.
func execIndex(v []byte) (e execFields, ok bool) {
	if execIndexFast(v, &e) {
		return e, true
	}
	e = execFields{}
	return e, json.Unmarshal(v, &e) == nil
}

// execIndexFast reads an entry's rule, outcome and at, passing over its
// other fields; false for anything outside what a Scanner reads, and for
// a key json.Unmarshal would take as one of the three (it matches keys
// without regard to case).
func execIndexFast(v []byte, e *execFields) bool {
	d := fastjson.New(v)
	return d.Object(func(key []byte) bool {
		switch k := string(key); k {
		case "rule":
			return d.String(&e.Rule)
		case "outcome":
			return d.String(&e.Outcome)
		case "at":
			return d.Int64(&e.At)
		default:
			if strings.EqualFold(k, "rule") || strings.EqualFold(k, "outcome") || strings.EqualFold(k, "at") {
				return false
			}
			return d.Skip()
		}
	})
}

// put points the index at a value written at loc and returns its run;
// exec, for a run's exec entry, carries its index fields. While the
// segments are read at open (no idx yet) the fields are the caller's to
// set.
func (l *SegmentLog) put(run string, seq int, loc segLoc, exec *runlog.Record) *segRun {
	r := l.last
	created := false
	if r == nil || r.meta.ID != run {
		r = l.runs[run]
		if r == nil {
			if l.idx == nil { // reading the segments at open
				r = &segRun{meta: runlog.Meta{ID: run}}
				l.opened = append(l.opened, r)
			} else {
				lr := &liveRun{segRun: segRun{meta: runlog.Meta{ID: run}}}
				lr.nodes = lr.first[:0]
				r = &lr.segRun
			}
			l.runs[run] = r
			created = true
		}
		l.last = r
	}
	grew := int64(loc.n)
	i, found := r.find(seq)
	if found {
		old := r.nodes[i].loc
		l.account(old.seg, -int64(old.n))
		grew -= int64(old.n)
		r.nodes[i].loc = loc
	} else {
		r.nodes = slices.Insert(r.nodes, i, segNode{uint32(seq), loc})
	}
	l.account(loc.seg, int64(loc.n))
	switch {
	case l.idx == nil:
		r.meta.Bytes += grew
	case created:
		r.meta.Bytes = grew
		if exec != nil {
			r.meta.Rule, r.meta.Outcome, r.meta.At = exec.Rule, exec.Outcome, exec.At
		}
		l.idx.Add(&r.meta)
	default:
		l.idx.Grow(&r.meta, grew)
		if exec != nil {
			l.idx.Set(&r.meta, exec.Rule, exec.Outcome, exec.At)
		}
	}
	return r
}

// ShareIDs replaces each of ids that names a run the log holds with the
// index's own copy of it, so that a caller keeping them (the runner, its
// replayed runs) and the index keep one string between them: 32 bytes a
// run, 3.2 MB at 100,000 parked runs (issue 38).
func (l *SegmentLog) ShareIDs(ids []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, id := range ids {
		if r := l.runs[id]; r != nil {
			ids[i] = r.meta.ID
		}
	}
}

// forget drops a run from the index (not from idx: the caller's); a run
// forgotten twice (named twice in one Delete) is dropped once.
func (l *SegmentLog) forget(r *segRun) {
	if l.last == r {
		l.last = nil
	}
	for _, n := range r.nodes {
		l.account(n.loc.seg, -int64(n.loc.n))
	}
	r.nodes = nil
	delete(l.runs, r.meta.ID)
}

// startSegment starts segment num in the spare file if there is one, or
// a new file. A spare starts with segMagic already; what follows it, its
// records as another segment, fails their CRCs as this one's, so the
// segment reads as empty until it is written — also after a power cut
// that kept the file's new name and lost what was written, or the other
// way round.
func (l *SegmentLog) startSegment(num int) error {
	path := l.segPath(num)
	if f := l.spare; f != nil {
		l.spare = nil
		if num > l.spareNum && os.Rename(l.sparePath(l.spareNum), path) == nil {
			l.addSegment(num, f)
			return nil
		}
		f.Close() // a new file instead
		os.Remove(l.sparePath(l.spareNum))
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("store: log: %w", err)
	}
	if _, err := f.WriteAt([]byte(segMagic), 0); err != nil {
		f.Close()
		os.Remove(path)
		return fmt.Errorf("store: log: %w", err)
	}
	l.addSegment(num, f)
	return nil
}

func (l *SegmentLog) addSegment(num int, f *os.File) {
	s := &segment{num: num, f: f, size: int64(len(segMagic)), seed: segSeed(num), dirty: true}
	l.segs = append(l.segs, s)
	l.size += s.size
	l.dirDirty = true // the next sync makes the new name survive a power cut
}

// retire removes a reclaimed segment's file, or keeps it as the spare
// when there is none and it has segMagic (a file without it holds
// records whose CRCs any segment would read as its own).
func (l *SegmentLog) retire(s *segment) error {
	path := l.segPath(s.num)
	if l.spare == nil && s.seed != 0 {
		if err := os.Rename(path, l.sparePath(s.num)); err == nil {
			l.spare, l.spareNum = s.f, s.num
			l.dirDirty = true
			return nil
		}
	}
	s.f.Close()
	return os.Remove(path)
}

// openSpare opens the spare a previous process kept, if there is one
// that starts with segMagic; any other is removed.
func (l *SegmentLog) openSpare() {
	names, _ := filepath.Glob(filepath.Join(l.dir, "spare-*.log"))
	for _, name := range names {
		if l.spare == nil {
			if num, err := fileNum(name, "spare-"); err == nil {
				if f := openMagic(name); f != nil {
					l.spare, l.spareNum = f, num
					continue
				}
			}
		}
		os.Remove(name)
	}
}

// openMagic opens the file at path for writing if it starts with
// segMagic; nil otherwise.
func openMagic(path string) *os.File {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil
	}
	head := make([]byte, len(segMagic))
	if _, err := f.ReadAt(head, 0); err != nil || string(head) != segMagic {
		f.Close()
		return nil
	}
	return f
}

// fileNum is the number in a log file's name: prefix, the number, ".log".
func fileNum(path, prefix string) (int, error) {
	return strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(filepath.Base(path), prefix), ".log"))
}

// appendRecord appends one record to buf, in place, and returns where its
// value starts in buf.
func appendRecord(buf []byte, seed uint32, op byte, run string, seq int, v []byte) ([]byte, int) {
	n := 1 + uvarintLen(uint64(len(run))) + len(run)
	if op == 'E' {
		n += uvarintLen(uint64(seq)) + len(v)
	}
	buf = binary.AppendUvarint(buf, uint64(n))
	start := len(buf)
	buf = append(buf, op)
	buf = binary.AppendUvarint(buf, uint64(len(run)))
	buf = append(buf, run...)
	if op == 'E' {
		buf = binary.AppendUvarint(buf, uint64(seq))
	}
	valueAt := len(buf)
	buf = append(buf, v...)
	buf = binary.LittleEndian.AppendUint32(buf, crc32.Update(seed, crcTable, buf[start:]))
	return buf, valueAt
}

func uvarintLen(x uint64) int {
	n := 1
	for ; x >= 0x80; x >>= 7 {
		n++
	}
	return n
}

// write appends l.buf to the newest segment and syncs it as mode says; it
// returns the offset the buffer starts at.
func (l *SegmentLog) write(mode int) (*segment, int64, error) {
	s := l.segs[len(l.segs)-1]
	at := s.size
	if at+int64(len(l.buf)) > math.MaxUint32 { // past what a segLoc holds
		return nil, 0, fmt.Errorf("segment %d would pass 4 GiB", s.num)
	}
	if _, err := s.f.WriteAt(l.buf, at); err != nil {
		s.f.Truncate(at) // no half record left for the next append to follow
		return nil, 0, err
	}
	s.dirty = true
	if mode == syncNow {
		if err := l.sync(); err != nil {
			return nil, 0, err
		}
	}
	s.size += int64(len(l.buf))
	l.size += int64(len(l.buf))
	return s, at, nil
}

// sync syncs every segment written since the last sync, and the
// directory if a segment was created.
func (l *SegmentLog) sync() error {
	for _, s := range l.segs {
		if s.dirty {
			if err := s.f.Sync(); err != nil {
				return err
			}
			s.dirty = false
		}
	}
	if l.dirDirty {
		d, err := os.Open(l.dir)
		if err != nil {
			return err
		}
		err = d.Sync()
		d.Close()
		if err != nil {
			return err
		}
		l.dirDirty = false
	}
	return nil
}

// Close stops the syncer, syncs what is not yet and closes the segments.
func (l *SegmentLog) Close() error {
	if l.stopSync != nil {
		l.stopOnce.Do(func() { close(l.stopSync) })
		<-l.syncDone
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	var errs []error
	if !l.ro {
		errs = append(errs, l.sync())
	}
	for _, s := range l.segs {
		errs = append(errs, s.f.Close())
	}
	l.segs = nil
	if l.spare != nil {
		errs = append(errs, l.spare.Close())
		l.spare = nil
	}
	return errors.Join(errs...)
}

// Commit appends the staged entries of keys to the newest segment, syncs
// it, and points the index at them: Append's write, with each exec
// entry's index fields read out of it.
func (l *SegmentLog) Commit(keys []string) (int, []runlog.Meta, error) {
	if l.ro {
		return 0, nil, errors.New("store: log opened read-only")
	}
	moves, err := l.take(keys)
	if err != nil {
		return 0, nil, err
	}
	recs := make([]runlog.Record, len(moves))
	for i, mv := range moves {
		recs[i] = runlog.Record{Run: mv.run, Seq: mv.seq, Value: mv.v}
		if e, ok := execIndex(mv.v); ok && mv.seq == 0 {
			recs[i].Rule, recs[i].Outcome, recs[i].At = e.Rule, e.Outcome, e.At
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.appendLocked(recs, syncNow); err != nil {
		return 0, nil, fmt.Errorf("store: log commit: %w", err)
	}
	l.unstage(keys)
	// The runs touched, found here rather than by every Append: only a
	// commit by key (a conversion, a test) asks for them.
	var touched []runlog.Meta
	seen := make(map[string]bool)
	for _, rec := range recs {
		if !seen[rec.Run] {
			seen[rec.Run] = true
			touched = append(touched, l.runs[rec.Run].meta)
		}
	}
	return len(moves), touched, l.reclaim()
}

// Append writes a batch the writer hands over with where each entry goes
// and its run's index fields (runlog.Appender): the device's commit, with
// no staging round trip and nothing parsed again. One write, synced
// within SyncEvery (syncLoop).
func (l *SegmentLog) Append(recs []runlog.Record) error {
	if l.ro {
		return errors.New("store: log opened read-only")
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.appendLocked(recs, syncNone); err != nil {
		return fmt.Errorf("store: log append: %w", err)
	}
	return l.reclaim()
}

// appendLocked writes recs in one write, syncs as mode says and points
// the index at them. A record that is not the log's fails them all before
// anything is written.
func (l *SegmentLog) appendLocked(recs []runlog.Record, mode int) error {
	if len(recs) == 0 {
		return nil
	}
	for i, r := range recs {
		// A run's records come together (runlog's writer groups them):
		// its id is checked once, not once a record.
		if (i == 0 || r.Run != recs[i-1].Run) && !runlog.ValidRun(r.Run) || r.Seq < 0 || r.Seq > runlog.MaxSeq {
			return fmt.Errorf("run %q node %d is not the log's", r.Run, r.Seq)
		}
	}
	seed, err := l.rotate()
	if err != nil {
		return err
	}
	l.buf = l.buf[:0]
	valAt := l.valAt[:0]
	for _, r := range recs {
		var at int
		l.buf, at = appendRecord(l.buf, seed, 'E', r.Run, r.Seq, r.Value)
		valAt = append(valAt, at)
	}
	l.valAt = valAt
	s, at, err := l.write(mode)
	if err != nil {
		return err
	}
	for i := range recs {
		rec := &recs[i]
		var exec *runlog.Record
		if rec.Seq == 0 {
			exec = rec
		}
		l.put(rec.Run, rec.Seq, segLoc{seg: uint32(s.num), off: uint32(at) + uint32(valAt[i]), n: uint32(len(rec.Value))}, exec)
	}
	return nil
}

// rotate starts a new segment when the newest is full, and returns the
// CRC seed of the segment the next write goes to. The sealed one is
// synced with the next sync, if it is still there (SyncEvery).
func (l *SegmentLog) rotate() (uint32, error) {
	if s := l.segs[len(l.segs)-1]; s.size >= l.max {
		if err := l.startSegment(s.num + 1); err != nil {
			return 0, err
		}
	}
	return l.segs[len(l.segs)-1].seed, nil
}

// Delete removes runs: a 'D' record each, then out of the index. The
// records are not synced on their own — the next sync takes them
// along: retention deletes every hundred runs, and a sync of its own was a
// tenth of the writer's time. A crash before that sync can bring runs
// back, for the next retention pass to delete again; an entry committed
// is never lost to it.
func (l *SegmentLog) Delete(runs []string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ro {
		return errors.New("store: log opened read-only")
	}
	dels, err := l.deleteLocked(runs)
	if err != nil {
		return err
	}
	gone := make([]*runlog.Meta, len(dels))
	for i, r := range dels {
		gone[i] = &r.meta
	}
	clear(dels) // no run kept alive by the buffer
	l.idx.Remove(gone)
	return l.reclaim()
}

// Retain deletes the runs p says to (runlog.Appender): chosen over the
// index's own Metas, so retention costs the writer no index of its own.
func (l *SegmentLog) Retain(p runlog.Retention) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ro {
		return errors.New("store: log opened read-only")
	}
	v := l.idx.Take(p)
	if len(v) == 0 {
		return nil
	}
	ids := l.ids[:0]
	for _, m := range v {
		ids = append(ids, m.ID)
	}
	l.ids = ids
	dels, err := l.deleteLocked(ids)
	clear(dels) // v has them; no run kept alive by the buffer
	if err != nil {
		for _, m := range v { // still kept: the next pass tries again
			l.idx.Add(m)
		}
		return err
	}
	return l.reclaim()
}

// deleteLocked writes a 'D' record for each of runs kept and forgets them
// (not in idx); it returns them, in a buffer the caller clears once done
// with it. Each run is looked up once.
func (l *SegmentLog) deleteLocked(runs []string) ([]*segRun, error) {
	seed, err := l.rotate()
	if err != nil {
		return nil, err
	}
	l.buf = l.buf[:0]
	dels := l.dels[:0]
	for _, run := range runs {
		if r := l.runs[run]; r != nil {
			l.buf, _ = appendRecord(l.buf, seed, 'D', run, 0, nil)
			dels = append(dels, r)
		}
	}
	l.dels = dels
	if len(dels) == 0 {
		return nil, nil
	}
	if _, _, err := l.write(syncNone); err != nil {
		return nil, fmt.Errorf("store: log delete: %w", err)
	}
	before := l.liveBefore[:0]
	for _, sg := range l.segs {
		before = append(before, sg.live)
	}
	for _, r := range dels {
		l.forget(r)
	}
	for i, sg := range l.segs {
		sg.draining = sg.live < before[i]
	}
	l.liveBefore = before
	return dels, nil
}

// reclaim removes the oldest segment while at most a sixteenth of it is
// live, or while the files hold more than twice the live bytes and two
// segments: its live entries are appended anew first (one sync), then the
// file goes. Retention deletes runs oldest first, so the oldest segment
// empties on its own but for the runs kept per rule and outcome; a higher
// bar copies entries forward that retention would have deleted a moment
// later (at one half, a segment was copied once or twice after it was
// sealed: every node is written open, then closed, so half of it is dead
// at once; at a quarter, a busy log rewrote a quarter of what it wrote,
// and reading it back was a tenth of the writer's time — BenchmarkExecLog).
// For the same reason, a segment that retention's last pass took entries
// out of (draining) waits for the next pass, unless the files are over
// twice the live bytes: only what retention keeps — runs still running,
// the newest of their rule and outcome — is worth copying, and that is
// what a pass that took nothing from the segment leaves behind. (At a
// sixteenth, with a pass every hundred runs, the segment's last ~150 runs
// were copied forward, with a read, a sync and a walk of the whole index,
// a pass or two before retention deleted them.)
func (l *SegmentLog) reclaim() error {
	for len(l.segs) > 1 {
		old := l.segs[0]
		over := l.size > 2*l.live+2*l.max
		if !(old.live*16 <= old.size || over) || old.live > 0 && old.draining && !over {
			return nil
		}
		if old.live > 0 {
			type copyOf struct {
				r  *segRun
				i  int // in r.nodes
				id string
			}
			var copies []copyOf
			lo, hi := old.size, int64(0)
			for id, r := range l.runs {
				for i, n := range r.nodes {
					if n.loc.seg == uint32(old.num) {
						copies = append(copies, copyOf{r, i, id})
						lo, hi = min(lo, int64(n.loc.off)), max(hi, int64(n.loc.off)+int64(n.loc.n))
					}
				}
			}
			// One read of the span the live entries are in: they are the
			// segment's newest runs mostly, near its end.
			data := make([]byte, hi-lo)
			if _, err := old.f.ReadAt(data, lo); err != nil {
				return fmt.Errorf("store: log compaction: %w", err)
			}
			seed, err := l.rotate()
			if err != nil {
				return err
			}
			l.buf = l.buf[:0]
			valAts := make([]int, len(copies))
			for k, c := range copies {
				n := c.r.nodes[c.i]
				from := int64(n.loc.off) - lo
				l.buf, valAts[k] = appendRecord(l.buf, seed, 'E', c.id, int(n.seq), data[from:from+int64(n.loc.n)])
			}
			s, at, err := l.write(syncNow)
			if err != nil {
				return fmt.Errorf("store: log compaction: %w", err)
			}
			l.copied += len(copies)
			for i, c := range copies {
				loc := c.r.nodes[c.i].loc
				old.live -= int64(loc.n)
				s.live += int64(loc.n)
				c.r.nodes[c.i].loc = segLoc{seg: uint32(s.num), off: uint32(at) + uint32(valAts[i]), n: loc.n}
			}
		}
		if err := l.retire(old); err != nil {
			return fmt.Errorf("store: log compaction: %w", err)
		}
		l.size -= old.size
		l.segs = l.segs[1:]
	}
	return nil
}

// Index lists every run kept.
func (l *SegmentLog) Index() ([]runlog.Meta, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]runlog.Meta, 0, len(l.runs))
	for _, r := range l.runs {
		out = append(out, r.meta)
	}
	return out, nil
}

// Entries returns a run's entries in key order.
func (l *SegmentLog) Entries(run string) ([][]byte, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	r := l.runs[run]
	if r == nil {
		return nil, nil
	}
	out := make([][]byte, 0, len(r.nodes))
	for _, n := range r.nodes {
		loc := n.loc
		s := l.segOf(loc.seg)
		if s == nil {
			return nil, fmt.Errorf("store: log entries of %s: segment %d is gone", run, loc.seg)
		}
		v := make([]byte, loc.n)
		if _, err := s.f.ReadAt(v, int64(loc.off)); err != nil {
			return nil, fmt.Errorf("store: log entries of %s: %w", run, err)
		}
		out = append(out, v)
	}
	return out, nil
}

// LastSeq is the highest node number kept for run.
func (l *SegmentLog) LastSeq(run string) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if r := l.runs[run]; r != nil && len(r.nodes) > 0 {
		return int(r.nodes[len(r.nodes)-1].seq), nil
	}
	return 0, nil
}

// ConvertBoltLog copies every run of the bbolt log at path into l, then
// removes the file: a device upgraded from the bbolt log keeps its
// history. It commits a thousand runs at a time (one sync each).
func ConvertBoltLog(path string, l *SegmentLog) (int, error) {
	b, err := OpenBoltLog(path, BoltOptions{})
	if err != nil {
		return 0, err
	}
	closed := false
	defer func() {
		if !closed {
			b.Close()
		}
	}()
	index, err := b.Index()
	if err != nil {
		return 0, err
	}
	n := 0
	var keys []string
	flush := func() error {
		_, _, err := l.Commit(keys)
		keys = keys[:0]
		return err
	}
	for _, m := range index {
		raw, err := b.Entries(m.ID)
		if err != nil {
			return n, err
		}
		var es []runlog.Entry
		for _, v := range raw {
			var probe struct {
				Seq int `json:"seq"` // nodes have one; the exec entry has none
			}
			json.Unmarshal(v, &probe)
			k := runlog.ExecKey(m.ID)
			if probe.Seq > 0 {
				k = runlog.NodeKey(m.ID, probe.Seq)
			}
			es = append(es, runlog.Entry{Key: k, Value: v})
			keys = append(keys, k)
		}
		l.Stage(es)
		if n++; n%1000 == 0 {
			if err := flush(); err != nil {
				return n, err
			}
		}
	}
	if err := flush(); err != nil {
		return n, err
	}
	closed = true
	if err := b.Close(); err != nil {
		return n, err
	}
	return n, os.Remove(path)
}

var (
	_ runlog.Store    = (*SegmentLog)(nil)
	_ runlog.Appender = (*SegmentLog)(nil)
)
