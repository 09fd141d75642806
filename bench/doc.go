// Package bench measures what users of warren run: the generated publisher
// and consumer of benchevents (a 1 KiB fact with patterns, bounded
// integers, enums, nested objects and arrays) against raw amqp091-go doing
// the same broker work, and against watermill-amqp, on the real broker;
// and, in BenchmarkScheduleLateness, how late the facts its publisher and
// its outbox writer schedule reach its consumer, beside publishing them
// now.
//
// It is a module of its own so that the baselines' libraries stay out of
// warren's go.mod. The benchmarks are in its _test.go files; scripts/bench
// (make bench) runs them in interleaved rounds and prints the ratios that
// docs/BENCHMARKS.md reports.
package bench
