package runtime

import (
	"errors"
	"fmt"
)

// ErrUnroutable is matched (with errors.Is) by the error Publish returns when
// the broker confirms a fact that reached no queue. It almost always means a
// topology that was never declared or a binding typo; [AllowUnroutable]
// accepts such facts instead.
var ErrUnroutable = errors.New("fact reached no queue")

// ErrNacked is matched by the error Publish returns when the broker refuses
// to take responsibility for a message (basic.nack), for example because a
// queue with x-overflow reject-publish is full.
var ErrNacked = errors.New("broker refused the message")

// ErrClosed is returned by operations on a [Conn], [Publisher] or
// [Consumer] that was closed.
var ErrClosed = errors.New("closed")

// UnroutableError is the error for a fact that reached no queue. It matches
// [ErrUnroutable].
type UnroutableError struct {
	Exchange   string
	RoutingKey string
	Reason     string // the broker's reply text, usually NO_ROUTE
}

func (e *UnroutableError) Error() string {
	return fmt.Sprintf("exchange %q, routing key %q: %s (%s): is the topology declared and the binding spelled right?",
		e.Exchange, e.RoutingKey, ErrUnroutable, e.Reason)
}

// Is reports whether target is [ErrUnroutable].
func (e *UnroutableError) Is(target error) bool { return target == ErrUnroutable }

// Permanent marks err as a failure that no retry will fix, such as a fact
// that breaks a business rule. The consumer then sends the message straight
// to the poison queue instead of along the retry ladder. Permanent(nil) is
// nil. The mark survives wrapping: a guard or middleware that wraps the
// error with %w keeps it permanent.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &permanentError{err: err}
}

// IsPermanent reports whether err, or any error it wraps, was marked by
// [Permanent].
func IsPermanent(err error) bool {
	var p *permanentError
	return errors.As(err, &p)
}

type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

// Unavailable marks err as an outage of something the handler depends on
// (a database, an API), not a fault of the message: "my dependency is
// down, this message is fine". Such a failure spends no attempt: the
// message waits in a delay queue with its attempt count unchanged, and
// after several in a row the consumer pauses and probes until the
// dependency is back (see [WithOutagePolicy]). Errors of the idempotency
// store ([WithGuard]) are marked so by the consumer. Unavailable(nil) is
// nil; the mark survives wrapping with %w.
func Unavailable(err error) error {
	if err == nil {
		return nil
	}
	return &unavailableError{err: err}
}

// IsUnavailable reports whether err, or any error it wraps, was marked by
// [Unavailable].
func IsUnavailable(err error) bool {
	var u *unavailableError
	return errors.As(err, &u)
}

type unavailableError struct{ err error }

func (e *unavailableError) Error() string { return e.err.Error() }
func (e *unavailableError) Unwrap() error { return e.err }

// PanicError is the error a consumer records when a handler panics. The
// panic is a transient failure (the message is retried), never a crash; the
// stack goes to the log, not into the x-failure header.
type PanicError struct {
	Value any    // what the handler panicked with
	Stack []byte // the goroutine's stack at the panic
	// stackLogged: the stack was logged once already (a batch handler's
	// panic, which every fact of the batch fails with), and the facts'
	// own lines leave it out.
	stackLogged bool
}

func (e *PanicError) Error() string { return fmt.Sprintf("handler panicked: %v", e.Value) }

// Unwrap returns the panic value when it is an error, so errors.Is and
// errors.As see through a panic(err).
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}
