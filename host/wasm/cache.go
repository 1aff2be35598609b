package wasm

import (
	"io/fs"
	"os"
	"path/filepath"
	"sort"
)

// DefaultCacheMaxBytes bounds the compilation cache on disk unless
// Config.CacheMaxBytes says otherwise: room for the first-party plugins
// many times over (each compiles to under 1 MB) and for a few versions of
// several Go plugins (10-30 MB each).
const DefaultCacheMaxBytes = 64 << 20

// pruneCache removes the files of the compilation cache in dir that were
// written longest ago until what is left fits max bytes. It runs before
// the runtime opens the cache, so no compiled code in use is read from a
// file it removes; a module whose file went is compiled again when it
// loads, and written anew. The order is by modification time, which is
// when wazero wrote a module's code: a module loaded every day but
// compiled long ago goes before one compiled yesterday, costing it one
// compilation. It answers the bytes it freed.
func pruneCache(dir string, max int64) (freed int64, err error) {
	type file struct {
		path string
		size int64
		mod  int64
	}
	var files []file
	var total int64
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return nil // gone meanwhile
		}
		files = append(files, file{p, info.Size(), info.ModTime().UnixNano()})
		total += info.Size()
		return nil
	})
	if err != nil || total <= max {
		return 0, err
	}
	sort.Slice(files, func(i, j int) bool { return files[i].mod < files[j].mod })
	for _, f := range files {
		if total <= max {
			break
		}
		if os.Remove(f.path) == nil {
			total -= f.size
			freed += f.size
		}
	}
	return freed, nil
}
