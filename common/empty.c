/* An empty translation unit so a folder library exists before its first source file. */
typedef int wd_empty_translation_unit;
