# tests/: unit tests are declared next to their module with ng_unit_test;
# integration scripts are tests/*/test_*.sh and need no rule.
