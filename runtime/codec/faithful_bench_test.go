package codec_test

import (
	"testing"
	"time"

	"github.com/go-faster/jx"

	"github.com/warrenbus/warren/runtime/codec"
)

// The benchmarks of the values faithful.go checks, on the reading of
// faithful_test.go.

// BenchmarkShapeValidate is Validate of a Shape value: what Publish runs
// before writing it.
func BenchmarkShapeValidate(b *testing.B) {
	v := newReading()
	b.ReportAllocs()
	for b.Loop() {
		if err := v.Validate(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkShapeEncode writes the same value: what Publish runs after.
func BenchmarkShapeEncode(b *testing.B) {
	v := newReading()
	e := jx.GetEncoder()
	b.ReportAllocs()
	for b.Loop() {
		e.Reset()
		codec.EncodeValue(e, v)
	}
}

func BenchmarkWriteFloat(b *testing.B) {
	e := jx.GetEncoder()
	b.ReportAllocs()
	for b.Loop() {
		e.Reset()
		codec.WriteFloat(e, 1234.5)
		codec.WriteFloat(e, 1e-7)
		codec.WriteFloat(e, 3e21)
		codec.WriteFloat(e, 42)
	}
}

func BenchmarkWriteTime(b *testing.B) {
	e := jx.GetEncoder()
	t := time.Date(2026, 3, 1, 12, 30, 0, 123_000_000, time.FixedZone("", 3600))
	b.ReportAllocs()
	for b.Loop() {
		e.Reset()
		codec.WriteTime(e, t)
	}
}

func BenchmarkStringCheck(b *testing.B) {
	c := &codec.String{MinLength: 1, MaxLength: 64}
	s := "north-hall/scale-3, café ø"
	b.ReportAllocs()
	for b.Loop() {
		if err := c.Check(s); err != nil {
			b.Fatal(err)
		}
	}
}
