package backoff

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Policy is how long to wait: First after the first failure, doubling to
// at most Max, and no attempt that would start past For from the first.
type Policy struct {
	First, Max, For time.Duration
}

// permanent is an error Retry returns at once.
type permanent struct{ err error }

func (p permanent) Error() string { return p.err.Error() }
func (p permanent) Unwrap() error { return p.err }

// Permanent marks err as one that waiting will not cure (a malformed URL, a
// wrong password): Retry returns it at once, unwrapped, rather than hide it
// behind a minute of retries.
func Permanent(err error) error { return permanent{err} }

// Retry calls f until it succeeds, waiting per p between attempts and
// telling retrying (nil: no one) before each wait. It returns nil, a
// Permanent error (unwrapped) at once, the last error when ctx ends, or
// the last error marked with how long it tried once the next attempt
// would start past p.For.
func Retry(ctx context.Context, p Policy, f func() error, retrying func(wait time.Duration, err error)) error {
	deadline := time.Now().Add(p.For)
	wait := p.First
	for {
		err := f()
		var perm permanent
		switch {
		case err == nil:
			return nil
		case errors.As(err, &perm):
			return perm.err
		}
		if time.Now().Add(wait).After(deadline) {
			return fmt.Errorf("%w (gave up after %v)", err, p.For)
		}
		if retrying != nil {
			retrying(wait, err)
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(wait):
		}
		wait = min(2*wait, p.Max)
	}
}
