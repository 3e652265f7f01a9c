from django.db import migrations


def seed(apps, schema_editor):
    Author = apps.get_model("blog", "Author")
    Author.objects.create(email="ada@example.com")


class Migration(migrations.Migration):
    dependencies = [("blog", "0001_initial")]
    operations = [migrations.RunPython(seed)]
