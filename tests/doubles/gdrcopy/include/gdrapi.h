/* TEST DOUBLE of gdrcopy's public header (see tests/doubles/README.md). */
#define GDR_API_MAJOR_VERSION 2
