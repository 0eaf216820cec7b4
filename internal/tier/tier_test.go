package tier

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestRoundsFollowTheTier(t *testing.T) {
	t.Setenv(SoakVariable, "")
	want := 2
	if testing.Short() {
		want = 1
	}
	assert.Equal(t, want, Rounds(1, 2, 3), "without the soak tier")
	assert.False(t, Soaking())

	t.Setenv(SoakVariable, "1")
	assert.True(t, Soaking())
	assert.Equal(t, 3, Rounds(1, 2, 3), "in the soak tier, with -short or not")
}

func TestSoakSkipsOutsideTheSoakTier(t *testing.T) {
	t.Setenv(SoakVariable, "")
	ran := false
	t.Run("soak", func(t *testing.T) {
		Soak(t)
		ran = true
	})
	assert.False(t, ran, "skipped without "+SoakVariable+"=1")

	t.Setenv(SoakVariable, "1")
	t.Run("soak", func(t *testing.T) {
		Soak(t)
		ran = true
	})
	assert.True(t, ran, "run with "+SoakVariable+"=1")
}
