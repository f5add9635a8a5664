/*
 * tests/support/json_same.c — see json_same.h.
 */
#include "tests/support/json_same.h"

#include <math.h>

bool wd_test_json_same(json_t *a, json_t *b) {
  if (json_is_number(a) && json_is_number(b)) {
    if (json_is_integer(a) && json_is_integer(b)) return json_integer_value(a) == json_integer_value(b);
    double x = json_number_value(a), y = json_number_value(b);
    double m = fmax(1.0, fmax(fabs(x), fabs(y)));
    return x == y || fabs(x - y) <= 1e-6 * m;
  }
  if (json_is_array(a) && json_is_array(b)) {
    if (json_array_size(a) != json_array_size(b)) return false;
    for (size_t i = 0; i < json_array_size(a); i++)
      if (!wd_test_json_same(json_array_get(a, i), json_array_get(b, i))) return false;
    return true;
  }
  if (json_is_object(a) && json_is_object(b)) {
    if (json_object_size(a) != json_object_size(b)) return false;
    const char *k;
    json_t *v;
    json_object_foreach(a, k, v) {
      json_t *w = json_object_get(b, k);
      if (!w || !wd_test_json_same(v, w)) return false;
    }
    return true;
  }
  return json_equal(a, b); /* strings, booleans, null; different kinds are not equal */
}
