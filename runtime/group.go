package runtime

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
)

// Runner is a consumer of any kind, as [RunAll] runs it and
// [HealthHandler] reports on it: a [*Consumer] (plain or ordered) or a
// [*Responder].
type Runner interface {
	// Name is the consumer's or responder's name in the topology.
	Name() string
	// Run consumes until ctx is cancelled (see [Consumer.Run]).
	Run(ctx context.Context) error
	// Health reports what it is doing.
	Health() Health
}

var (
	_ Runner = (*Consumer)(nil)
	_ Runner = (*Responder)(nil)
)

// RunAll runs consumers together: it starts each one's Run, and returns
// when ctx ends or when one of them stops for good (an error such as a
// work queue that does not exist, or a closed Conn). Either way it then
// cancels the others, waits until every one has shut down gracefully (see
// [Consumer.Run]) and returns the errors of those that failed, joined; nil
// after a clean shutdown on ctx.
//
//	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
//	defer stop()
//	if err := runtime.RunAll(ctx, indexer, mailer); err != nil {
//		log.Fatal(err)
//	}
//
// Consumers of every kind run together: plain and ordered consumers and
// responders alike.
func RunAll(ctx context.Context, consumers ...Runner) error {
	if len(consumers) == 0 {
		return errors.New("run all: no consumers")
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make([]error, len(consumers))
	var wg sync.WaitGroup
	for i, c := range consumers {
		if isNil(c) {
			errs[i] = fmt.Errorf("run all: consumer %d is nil", i)
			cancel()
			continue
		}
		wg.Go(func() {
			if err := c.Run(ctx); err != nil {
				errs[i] = err
				cancel() // one stopped for good: stop the others
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// isNil reports whether r is nil or a nil pointer in an interface.
func isNil(r Runner) bool {
	if r == nil {
		return true
	}
	v := reflect.ValueOf(r)
	return v.Kind() == reflect.Pointer && v.IsNil()
}
