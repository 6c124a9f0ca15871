// Package exitcode carries a command's exit status through an error
// return, so that the packages a command calls can say "the caller's
// mistake" (2) or "not delivered" (1) without knowing about processes.
// The codes are documented in docs/configuration.md.
package exitcode

import (
	"errors"
	"fmt"
)

// The exit codes of every handoff command.
const (
	OK           = 0 // success; for diagnose: every batch delivered
	NotDelivered = 1 // the answer is "no": a batch not delivered, a check failed, an open finding
	Usage        = 2 // bad flags, bad input, bad contract, a named pipeline or batch that matches nothing
	Failure      = 3 // a runtime failure: I/O, Kafka, ClickHouse
)

// Error is an error with an exit code. Err may be nil: the command has
// already said why (for example, the diagnoses it printed).
type Error struct {
	Code int
	Err  error
}

func (e *Error) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit status %d", e.Code)
	}
	return e.Err.Error()
}

func (e *Error) Unwrap() error { return e.Err }

// Usagef is a usage error (exit 2): the caller's mistake, said as the
// format says.
func Usagef(format string, args ...any) error {
	return &Error{Code: Usage, Err: fmt.Errorf(format, args...)}
}

// Silent is an exit code with nothing more to say.
func Silent(code int) error { return &Error{Code: code} }

// Of returns the exit code of err: OK for nil, the code of an *Error in
// its chain, else Failure; and the error to print (nil when there is
// nothing to say).
func Of(err error) (int, error) {
	if err == nil {
		return OK, nil
	}
	var e *Error
	if errors.As(err, &e) {
		if e.Err == nil {
			return e.Code, nil
		}
		return e.Code, err
	}
	return Failure, err
}
