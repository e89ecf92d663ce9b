// Package splitmix is SplitMix64 (Steele, Lea and Flood, 2014): a tiny generator whose output
// for a seed is fixed forever, unlike the standard library's, whose derived streams may change
// between Go releases. The generated model's bytes, the prompts and the simulated engine's
// scenarios depend on that.
package splitmix

// Source is one SplitMix64 stream. The zero value is the stream seeded with 0.
type Source struct{ state uint64 }

// New returns the stream that starts at seed.
func New(seed uint64) Source { return Source{state: seed} }

// Uint64 returns the stream's next value.
func (s *Source) Uint64() uint64 {
	s.state += 0x9e3779b97f4a7c15
	return Mix(s.state)
}

// Mix is SplitMix64's finaliser, a bijection on uint64: distinct inputs give distinct
// outputs, and neighbouring inputs unrelated ones.
func Mix(z uint64) uint64 {
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}
