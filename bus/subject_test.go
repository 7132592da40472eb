package bus

import "testing"

func TestSubjects(t *testing.T) {
	s, err := NewSubjects("", "wordcount")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ got, want string }{
		{s.Data(2), "ardea.default.wordcount.data.2"},
		{s.Credit(11), "ardea.default.wordcount.credit.11"},
		{s.All(), "ardea.default.wordcount.>"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
	s2, err := NewSubjects("acme", "t1")
	if err != nil {
		t.Fatal(err)
	}
	if got := s2.Data(1); got != "ardea.acme.t1.data.1" {
		t.Errorf("got %q", got)
	}
	for _, bad := range [][2]string{{"a.b", "t"}, {"a", "t*"}, {"a", ">"}, {"a", ""}, {"a b", "t"}, {"a", "x\n"}} {
		if _, err := NewSubjects(bad[0], bad[1]); err == nil {
			t.Errorf("NewSubjects(%q, %q): no error", bad[0], bad[1])
		}
	}
}
