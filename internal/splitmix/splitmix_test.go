package splitmix

import "testing"

// Published reference outputs of SplitMix64 (splitmix64.c) seeded with 0 and with 1234567.
func TestReferenceSequence(t *testing.T) {
	for _, tc := range []struct {
		seed uint64
		want []uint64
	}{
		{0, []uint64{0xe220a8397b1dcdaf, 0x6e789e6aa1b965f4, 0x06c45d188009454f}},
		{1234567, []uint64{6457827717110365317, 3203168211198807973, 9817491932198370423}},
	} {
		s := New(tc.seed)
		for i, want := range tc.want {
			if got := s.Uint64(); got != want {
				t.Errorf("seed %d, value %d: got %#x, want %#x", tc.seed, i, got, want)
			}
		}
	}
}

func TestMixIsTheStepWithoutTheIncrement(t *testing.T) {
	var seed uint64 = 41
	seed -= 0x9e3779b97f4a7c15
	s := New(seed)
	if got, want := s.Uint64(), Mix(41); got != want {
		t.Fatalf("Uint64 after seeding one increment below 41 = %#x, Mix(41) = %#x", got, want)
	}
}
