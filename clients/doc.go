// Package clients holds the Python and PHP client packages of testdbd
// (clients/python, clients/php) and, in clients_test.go, their tests
// against a daemon: the Python package installed offline into a fresh
// virtualenv and used by pytest-xdist and Django suites, the PHP package
// installed through a Composer path repository and used by PHPUnit.
// Each test checks that every lease was released afterwards.
package clients
