package regular

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
)

// ErrNotRegular is a path that names a FIFO, a device, a socket or a
// directory (after symbolic links, which are followed).
var ErrNotRegular = errors.New("not a regular file")

// ReadFile returns the contents of the regular file at path, or an error
// when it is not one (ErrNotRegular) or holds more than max bytes. It opens
// without blocking, so a FIFO is refused rather than waited on.
func ReadFile(path string, max int64) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: %w (%s)", path, ErrNotRegular, fi.Mode().Type())
	}
	if fi.Size() > max {
		return nil, fmt.Errorf("%s: %d bytes, over the limit of %d", path, fi.Size(), max)
	}
	// The size can change under us (a file being written): read at most
	// max+1 bytes whatever stat said.
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("%s: over the limit of %d bytes", path, max)
	}
	return b, nil
}

// WriteFile writes b to path through a temporary file beside it and a
// rename: a crash never leaves half a file under path, and a reader sees
// the old contents or the new, never a mix. The module store and deployed
// mode write what a later start loads; a torn file there would be a
// module or a rule that no longer parses.
func WriteFile(path string, b []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
