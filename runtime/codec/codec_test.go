package codec_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/go-faster/jx"
	"github.com/warrenbus/warren/runtime/codec"
)

func TestErrorPointerIsBuiltOnTheWayOut(t *testing.T) {
	err := codec.Expect("at most 3 items")
	err = codec.AtIndex(err, 2)
	err = codec.AtField(err, "a/b~c")
	err = fmt.Errorf("decode: %w", err)

	var ce *codec.Error
	if !errors.As(err, &ce) {
		t.Fatalf("errors.As found no *codec.Error in %v", err)
	}
	if ce.Pointer != "/a~1b~0c/2" {
		t.Errorf("Pointer = %q, want /a~1b~0c/2", ce.Pointer)
	}
	if got, want := ce.Error(), "/a~1b~0c/2: at most 3 items"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}

func TestRootErrorReadsRoot(t *testing.T) {
	if got, want := codec.Expect("an object").Error(), "(root): an object"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}

func TestWrapKeepsTheCause(t *testing.T) {
	_, cause := jx.DecodeStr(`{"a":`).Str()
	if cause == nil {
		t.Fatal("the tokenizer accepted a truncated document")
	}
	err := codec.AtField(codec.Wrap(cause, "a string"), "a")
	var ce *codec.Error
	if !errors.As(err, &ce) || ce.Pointer != "/a" || !errors.Is(err, cause) {
		t.Fatalf("got %#v, want an *Error at /a wrapping %v", err, cause)
	}
	if again := codec.Wrap(err, "ignored"); again != err {
		t.Errorf("Wrap of an *Error returned %v, want it unchanged", again)
	}
}

func TestNonCodecErrorBecomesOneAtTheMember(t *testing.T) {
	err := codec.AtField(errors.New("boom"), "x")
	var ce *codec.Error
	if !errors.As(err, &ce) || ce.Pointer != "/x" || ce.Expected != "boom" {
		t.Fatalf("got %#v", err)
	}
}
