#!/bin/bash
set -uxo pipefail
source /opt/miniconda3/bin/activate
conda activate testbed
cd /testbed
git config --global --add safe.directory /testbed
cd /testbed
git status
git show
git -c core.fileMode=false diff b8501c2ab4ecda5a848f958e939c8a417d6052a8
source /opt/miniconda3/bin/activate
conda activate testbed
git checkout b8501c2ab4ecda5a848f958e939c8a417d6052a8 tests/test_parser.py
git apply -v - <<'EOF_114329324912'
diff --git a/tests/test_parser.py b/tests/test_parser.py
index fc02f21..6cd66fc 100644
--- a/tests/test_parser.py
+++ b/tests/test_parser.py
@@ -8,6 +8,7 @@ def test_tokenize():
 
 def test_addition():
     assert evaluate("1 + 2") == 3
+    assert evaluate("1 + 2 + 3") == 6
 
 
 def test_precedence():
@@ -25,3 +26,16 @@ def test_unary_minus():
 def test_rejects_garbage():
     with pytest.raises(ParseError):
         evaluate("2 $ 3")
+
+
+def test_subtraction_is_left_associative():
+    assert evaluate("10 - 4 - 3") == 3
+    assert evaluate("20 - 5 - 5 - 5") == 5
+
+
+def test_division_is_left_associative():
+    assert evaluate("16 / 4 / 2") == 2
+
+
+def test_mixed_chain():
+    assert evaluate("2 * 6 / 3 - 1 - 1") == 2

EOF_114329324912
: '>>>>> Start Test Output'
pytest -rA tests/test_parser.py
: '>>>>> End Test Output'
git checkout b8501c2ab4ecda5a848f958e939c8a417d6052a8 tests/test_parser.py
