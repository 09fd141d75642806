// Package bench measures what users of warren run: the generated publisher
// and consumer of benchevents (a 1 KiB fact with patterns, bounded
// integers, enums, nested objects and arrays) against raw amqp091-go doing
// the same broker work, and against watermill-amqp, on the real broker.
//
// It is a module of its own so that the baselines' libraries stay out of
// warren's go.mod. The benchmarks are in its _test.go files; scripts/bench
// (make bench) runs them in interleaved rounds and prints the ratios that
// docs/BENCHMARKS.md reports.
package bench
