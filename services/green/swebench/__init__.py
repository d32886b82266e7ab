"""SWE-bench on green's side: instances, image names, and the judge (apply the model's patch,
run FAIL_TO_PASS / PASS_TO_PASS in a fresh container). Purple's runner reuses them."""
