package backoff_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ruled-dev/ruled/internal/backoff"
)

// A store that answers on the third try, and one that refuses for good.
func ExampleRetry() {
	tries := 0
	err := backoff.Retry(context.Background(), backoff.Policy{First: time.Millisecond, Max: 4 * time.Millisecond, For: time.Minute},
		func() error {
			if tries++; tries < 3 {
				return errors.New("not answering")
			}
			return nil
		}, func(wait time.Duration, err error) { fmt.Println("retrying in", wait, "after:", err) })
	fmt.Println(err, "after", tries, "tries")

	err = backoff.Retry(context.Background(), backoff.Policy{First: time.Millisecond, Max: time.Millisecond, For: time.Minute},
		func() error { return backoff.Permanent(errors.New("wrong password")) }, nil)
	fmt.Println(err)
	// Output:
	// retrying in 1ms after: not answering
	// retrying in 2ms after: not answering
	// <nil> after 3 tries
	// wrong password
}
