package binlog_test

import (
	"testing"

	"github.com/testdbd/testdbd/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }
